"""Keyboard gestures the app tests share: editing a field as a user does."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QSpinBox


def retype(qtbot, widget, text: str) -> None:
    """Focus ``widget``, replace what it shows by typing ``text``, press Enter (as a user does)."""
    widget.setFocus()
    target = widget.lineEdit() if isinstance(widget, (QSpinBox, QComboBox)) else widget
    target.selectAll()
    qtbot.keyClicks(target, text)
    qtbot.keyClick(target, Qt.Key.Key_Return)
