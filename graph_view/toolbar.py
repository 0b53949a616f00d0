"""The canvas's own toolbar: TRAIN / TEST, the split overlay, the flow direction, fit and re-layout."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QToolButton, QWidget

from proto import caffe_pb2

STYLE = """
QWidget#graphToolbar { background: #ffffff; border-bottom: 1px solid #e2e5ea; }
QToolButton { border: 1px solid #d5d9e0; background: #f7f8fa; padding: 3px 10px; color: #374151; }
QToolButton:hover { background: #eef1f5; }
QToolButton:checked { background: #2f5f9e; color: white; border-color: #2f5f9e; }
QToolButton#phaseTrain { border-top-left-radius: 4px; border-bottom-left-radius: 4px; }
QToolButton#phaseTest { border-top-right-radius: 4px; border-bottom-right-radius: 4px; border-left: none; }
QToolButton#splits, QToolButton#direction, QToolButton#fit, QToolButton#relayout { border-radius: 4px; }
QLabel#graphHint { color: #8a5a00; padding-left: 8px; }
"""


class GraphToolbar(QWidget):
    phase_changed = Signal(int)
    splits_toggled = Signal(bool)
    direction_toggled = Signal(bool)  # True: top-to-bottom
    fit_clicked = Signal()
    relayout_clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("graphToolbar")
        self.setStyleSheet(STYLE)
        self.train = self._button("TRAIN", "phaseTrain", "Show the net as Caffe builds it for training")
        self.test = self._button("TEST", "phaseTest", "Show the net as Caffe builds it for testing")
        self.phases = QButtonGroup(self)
        self.phases.setExclusive(True)
        self.phases.addButton(self.train, caffe_pb2.TRAIN)
        self.phases.addButton(self.test, caffe_pb2.TEST)
        self.train.setChecked(True)
        self.phases.idClicked.connect(self.phase_changed)
        self.splits = self._button(
            "Splits",
            "splits",
            "Show the Split layers Caffe inserts where a blob feeds several layers (read-only)",
        )
        self.splits.toggled.connect(self._splits)
        self.direction = self._button(
            "↑ Bottom-up", "direction", "Flow direction: bottom-to-top as Caffe draws, or top-to-bottom"
        )
        self.direction.toggled.connect(self._direction)
        self.fit = self._button("Fit", "fit", "Fit the whole net in view (F)", checkable=False)
        self.fit.clicked.connect(self.fit_clicked)
        self.relayout = self._button(
            "Auto layout", "relayout", "Forget moved boxes and lay the net out again", checkable=False
        )
        self.relayout.clicked.connect(self.relayout_clicked)
        self.hint = QLabel("", self)
        self.hint.setObjectName("graphHint")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 5, 8, 5)
        layout.setSpacing(0)
        layout.addWidget(self.train)
        layout.addWidget(self.test)
        for widget in (self.splits, self.direction, self.fit, self.relayout):
            layout.addSpacing(8)
            layout.addWidget(widget)
        layout.addWidget(self.hint)
        layout.addStretch(1)

    def _button(self, text: str, name: str, tip: str, checkable: bool = True) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setObjectName(name)
        button.setToolTip(tip)
        button.setCheckable(checkable)
        return button

    def _splits(self, on: bool) -> None:
        self.hint.setText("As Caffe runs it: read-only" if on else "")
        self.splits_toggled.emit(on)

    def _direction(self, downward: bool) -> None:
        self.direction.setText("↓ Top-down" if downward else "↑ Bottom-up")
        self.direction_toggled.emit(downward)

    def set_splits(self, on: bool) -> None:
        if self.splits.isChecked() != on:
            self.splits.blockSignals(True)
            self.splits.setChecked(on)
            self.splits.blockSignals(False)
        self.hint.setText("As Caffe runs it: read-only" if on else "")

    def set_downward(self, downward: bool) -> None:
        if self.direction.isChecked() != downward:
            self.direction.blockSignals(True)
            self.direction.setChecked(downward)
            self.direction.blockSignals(False)
        self.direction.setText("↓ Top-down" if downward else "↑ Bottom-up")
