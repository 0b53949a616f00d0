"""A collapsible group: a header that folds its body away, for nested messages and sections."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget


class Group(QFrame):
    """``removed`` fires when its remove button (if ``removable``) is clicked; ``cleared`` for reset."""

    removed = Signal()
    cleared = Signal()

    def __init__(
        self,
        title: str,
        parent: QWidget | None = None,
        *,
        expanded: bool = True,
        removable: bool = False,
        clearable: bool = False,
        section: bool = False,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("formSection" if section else "formGroup")
        self.header = QToolButton(self)
        self.header.setObjectName("sectionHeader" if section else "groupHeader")
        self.header.setText(title)
        self.header.setCheckable(True)
        self.header.setChecked(expanded)
        self.header.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.header.setAutoRaise(True)
        self.header.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.header.toggled.connect(self.set_expanded)
        self.summary = _Summary(self)
        self.summary.setObjectName("groupSummary")
        # A long summary ("lr_mult 1.0, decay_mult 1.0") elides rather than widening the inspector.
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.summary.setMinimumWidth(0)
        self.summary.clicked = self.header.toggle  # the rest of the header's row opens it too
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.NoTextInteraction)

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.setSpacing(2)
        bar.addWidget(self.header)
        bar.addWidget(self.summary, 1)
        self.clear_button = self._button(
            bar, "↺", "Reset to the default (remove from the prototxt)", clearable
        )
        self.clear_button.clicked.connect(self.cleared.emit)
        self.remove_button = self._button(bar, "×", "Remove", removable)
        self.remove_button.clicked.connect(self.removed.emit)

        self.body = QWidget(self)
        self.body.setObjectName("sectionBody" if section else "groupBody")
        self.body_layout = QVBoxLayout(self.body)
        self.body_layout.setContentsMargins(0 if section else 14, 2, 0, 6 if section else 4)
        self.body_layout.setSpacing(4)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(bar)
        layout.addWidget(self.body)
        self.set_expanded(expanded)

    def _button(self, bar: QHBoxLayout, text: str, tip: str, shown: bool) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.setObjectName("formRemoveButton")
        button.setVisible(shown)
        bar.addWidget(button)
        return button

    @property
    def expanded(self) -> bool:
        return self.header.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        if self.header.isChecked() != expanded:
            self.header.setChecked(expanded)  # comes back here through toggled
            return
        self.header.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self.body.setVisible(expanded)
        self.summary.setVisible(not expanded)  # open, the fields say it themselves

    def set_summary(self, text: str) -> None:
        self.summary.set_full_text(text)

    def add_widget(self, widget: QWidget) -> None:
        self.body_layout.addWidget(widget)


class _Summary(QLabel):
    """The header's summary: drawn cut to its room with "…", and said whole on hover when cut
    (``text()`` stays whole)."""

    clicked: Callable[[], object] = staticmethod(lambda: None)

    def mousePressEvent(self, event) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked()
        super().mousePressEvent(event)

    def set_full_text(self, text: str) -> None:
        self.setText(text)
        self._tip()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._tip()

    def _tip(self) -> None:
        cut = self.fontMetrics().horizontalAdvance(self.text()) > self.contentsRect().width()
        self.setToolTip(self.text() if cut else "")

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        room = self.contentsRect()
        shown = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, room.width())
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(room, int(self.alignment() | Qt.AlignmentFlag.AlignVCenter), shown)
