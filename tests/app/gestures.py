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


def drag_box(qtbot, window, key: str, dx: int, dy: int) -> None:
    """Drag the box ``key`` on the window's canvas by its header, with real mouse events."""
    from PySide6.QtTest import QTest

    window.graph.sync()
    view = window.graph.view
    node = window.graph.scene.nodes[key]
    view.ensureVisible(node, 80, 80)
    start = view.mapFromScene(node.mapToScene(node.header_rect().center()))
    end = start + type(start)(dx, dy)
    left, none = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    QTest.mousePress(view.viewport(), left, none, start)
    for i in range(1, 7):
        QTest.mouseMove(view.viewport(), start + (end - start) * i / 6)
    QTest.mouseRelease(view.viewport(), left, none, end)
