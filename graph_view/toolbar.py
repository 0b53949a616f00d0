"""The canvas's own toolbar: TRAIN / TEST, the split overlay, the flow direction, fit and re-layout,
and at its right end the canvas's totals (layers shown, params, FLOPs): one row, no footer below.
The Splits view's read-only note is a badge on the canvas itself (``ModeNote``), not on this row.

The buttons sit in a QToolBar, so a narrow canvas tucks the last of them behind its » button
instead of widening the window; the totals shorten with … and say it whole on hover. Colours are
palette roles: the bar follows the application theme. ``embed()`` drops the row's own frame when
a window puts it into its main toolbar (one row for the window's and the canvas's buttons).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QPainter
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolBar, QToolButton, QWidget

from proto import caffe_pb2

STYLE = """
QWidget#graphToolbar { background: palette(window); border-bottom: 1px solid palette(mid); }
QToolBar#graphButtons { background: transparent; border: none; spacing: 0px; padding: 0px; }
QToolButton { border: 1px solid palette(mid); background: palette(button); padding: 3px 10px;
    color: palette(button-text); }
QToolButton:hover { background: palette(light); }
QToolButton:checked { background: palette(highlight); color: palette(highlighted-text);
    border-color: palette(highlight); }
QToolButton#phaseTrain { border-top-left-radius: 4px; border-bottom-left-radius: 4px; }
QToolButton#phaseTest { border-top-right-radius: 4px; border-bottom-right-radius: 4px; border-left: none; }
QToolButton#splits, QToolButton#direction, QToolButton#fit, QToolButton#relayout { border-radius: 4px; }
QToolButton#qt_toolbar_ext_button { border: none; background: transparent; padding: 0px 2px; }
QLabel#graphTotals { color: palette(text); padding-left: 10px; }
"""
EMBEDDED = "QWidget#graphToolbar { background: transparent; border: none; }"


class ElidedLabel(QLabel):
    """One line that never asks for more width than it gets: cut with … to its width, whole in
    its tooltip; ``text()`` stays the whole text."""

    def __init__(self, name: str, parent: QWidget | None = None, padding: int = 10) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.padding = padding  # the style sheet's left padding
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)
        self.updateGeometry()

    def sizeHint(self) -> QSize:
        width = self.fontMetrics().horizontalAdvance(self.text()) + self.padding + 4 if self.text() else 0
        return QSize(width, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        return QSize(min(self.sizeHint().width(), 40), super().minimumSizeHint().height())

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        room = self.contentsRect()  # inside the style sheet's padding
        shown = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, room.width())
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(room, int(self.alignment()), shown)


class ModeNote(QLabel):
    """A badge at the canvas's top-left corner saying what the view is (the Splits view: read-only);
    hidden when empty. While shown, the view's top margin holds it, so it never covers a box."""

    MARGIN = 8

    def __init__(self, view: QWidget) -> None:
        super().__init__(view)
        self.setObjectName("modeNote")
        self.setStyleSheet(
            "QLabel#modeNote { background: palette(tool-tip-base); color: palette(tool-tip-text);"
            " border: 1px solid palette(mid); border-radius: 4px; padding: 3px 8px; }"
        )
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        view.installEventFilter(self)
        self.hide()

    def say(self, text: str) -> None:
        self.setText(text)
        self.adjustSize()
        self.move(self.MARGIN, self.MARGIN)
        self.setVisible(bool(text))
        self.raise_()
        view: Any = self.parentWidget()
        view.setViewportMargins(0, self.height() + 2 * self.MARGIN if text else 0, 0, 0)

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Resize and self.isVisible():
            self.move(self.MARGIN, self.MARGIN)
        return False


class GraphToolbar(QWidget):
    phase_changed = Signal(int)
    splits_toggled = Signal(bool)
    direction_toggled = Signal(bool)  # True: top-to-bottom
    fit_clicked = Signal()
    relayout_clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("graphToolbar")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet(STYLE)
        self.bar = QToolBar(self)
        self.bar.setObjectName("graphButtons")
        self.bar.setIconSize(QSize(12, 12))
        # Actions, not bare buttons: those the bar has no room for go to its » menu, still usable.
        self.train_action, self.train = self._add(
            "TRAIN", "phaseTrain", "Show the net as Caffe builds it for training"
        )
        self.test_action, self.test = self._add(
            "TEST", "phaseTest", "Show the net as Caffe builds it for testing"
        )
        self.phases = QActionGroup(self)
        self.phases.setExclusive(True)
        self.phases.addAction(self.train_action)
        self.phases.addAction(self.test_action)
        self.train_action.setChecked(True)
        self.train_action.triggered.connect(lambda: self.phase_changed.emit(caffe_pb2.TRAIN))
        self.test_action.triggered.connect(lambda: self.phase_changed.emit(caffe_pb2.TEST))
        self.splits_action, self.splits = self._add(
            "Splits",
            "splits",
            "Show the Split layers Caffe inserts where a blob feeds several layers (read-only)",
            gap=True,
        )
        self.splits_action.toggled.connect(self._splits)
        self.direction_action, self.direction = self._add(
            "↑ Bottom-up",
            "direction",
            "Flow direction: bottom-to-top as Caffe draws, or top-to-bottom",
            gap=True,
        )
        self.direction_action.toggled.connect(self._direction)
        self.fit_action, self.fit = self._add(
            "Fit", "fit", "Fit the whole net in view (F)", checkable=False, gap=True
        )
        self.fit_action.triggered.connect(self.fit_clicked)
        self.relayout_action, self.relayout = self._add(
            "Auto layout",
            "relayout",
            "Forget moved boxes and lay the net out again",
            checkable=False,
            gap=True,
        )
        self.relayout_action.triggered.connect(self.relayout_clicked)
        self.totals = ElidedLabel("graphTotals", self)  # never widens the window: cut, whole on hover
        self.row = layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(0)
        layout.addWidget(self.bar)
        layout.addStretch(1)
        layout.addWidget(self.totals)

    def embed(self) -> None:
        """Inside a window's toolbar: no frame or margins of its own (one row, one background)."""
        self.setStyleSheet(STYLE + EMBEDDED)
        self.row.setContentsMargins(0, 0, 0, 0)

    def _add(
        self, text: str, name: str, tip: str, checkable: bool = True, gap: bool = False
    ) -> tuple[QAction, QToolButton]:
        if gap:
            space = QWidget(self.bar)
            space.setFixedWidth(8)
            self.bar.addWidget(space)
        action = QAction(text, self)
        action.setToolTip(tip)
        action.setCheckable(checkable)
        self.bar.addAction(action)
        button = self.bar.widgetForAction(action)
        assert isinstance(button, QToolButton)
        button.setObjectName(name)
        return action, button

    def _splits(self, on: bool) -> None:
        self.splits_toggled.emit(on)

    def _direction(self, downward: bool) -> None:
        self.direction_action.setText("↓ Top-down" if downward else "↑ Bottom-up")
        self.direction_toggled.emit(downward)

    def set_splits(self, on: bool) -> None:
        if self.splits_action.isChecked() != on:
            self.splits_action.blockSignals(True)
            self.splits_action.setChecked(on)
            self.splits_action.blockSignals(False)

    def set_downward(self, downward: bool) -> None:
        if self.direction_action.isChecked() != downward:
            self.direction_action.blockSignals(True)
            self.direction_action.setChecked(downward)
            self.direction_action.blockSignals(False)
        self.direction_action.setText("↓ Top-down" if downward else "↑ Bottom-up")
