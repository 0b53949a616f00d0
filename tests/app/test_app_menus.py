"""Menus like every editor's, each command with its key shown: Edit acts on what has the focus,
View zooms and switches the canvas's views, Help lists the keys and says how to start."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QLineEdit


@pytest.fixture
def window(lenet_window):
    return lenet_window


def menu(window, title):
    return next(a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == title)


def entries(window, title) -> dict[str, str]:
    return {
        a.text().replace("&", ""): a.shortcut().toString()
        for a in menu(window, title).actions()
        if not a.isSeparator() and a.menu() is None
    }


def test_edit_menu_has_the_clipboard_commands_with_their_keys(window):
    edit = entries(window, "Edit")
    for name, key in (
        ("Cut", "Ctrl+X"),
        ("Copy", "Ctrl+C"),
        ("Paste", "Ctrl+V"),
        ("Duplicate", "Ctrl+D"),
        ("Delete", "Del"),
        ("Select All", "Ctrl+A"),
        ("Find…", "Ctrl+F"),
    ):
        assert edit.get(name) == key, (name, edit)


def test_edit_commands_act_on_the_canvas_or_on_the_focused_text(qtbot, window):
    names = [layer.name for layer in window.doc.net.layer]
    window.selection.select(names.index("conv1"))
    window.graph.view.setFocus()
    duplicate = next(a for a in menu(window, "Edit").actions() if a.text() == "D&uplicate")
    duplicate.trigger()
    assert len(window.doc.net.layer) == len(names) + 1  # the canvas duplicated the box

    field = window.workbench.palette.findChild(QLineEdit)  # the palette's search field
    field.setFocus()
    field.setText("pooling")
    qtbot.waitUntil(lambda: QGuiApplication.focusObject() is field)
    select_all = next(a for a in menu(window, "Edit").actions() if a.text() == "Select &All")
    copy = next(a for a in menu(window, "Edit").actions() if a.text() == "&Copy")
    select_all.trigger()
    copy.trigger()
    assert QGuiApplication.clipboard().text() == "pooling"  # the field's text, not the boxes


def test_view_menu_zooms_and_switches_views_with_keys(qtbot, window):
    view = entries(window, "View")
    for name, key in (
        ("Zoom In", "Ctrl++"),
        ("Zoom Out", "Ctrl+-"),
        ("Fit Net", "Ctrl+0"),
        ("Actual Size", "Ctrl+1"),
        ("Splits", "Ctrl+Alt+S"),
        ("Flow Top-Down", "Ctrl+Alt+D"),
        ("Minimap", "Ctrl+Alt+M"),
        ("Hide Panels", "F12"),
    ):
        assert view.get(name) == key, (name, view)
    phase = next(a.menu() for a in menu(window, "View").actions() if a.menu() and "Phase" in a.text())
    assert [a.text() for a in phase.actions()] == ["TRAIN", "TEST"]
    zoom = window.graph.view.zoom()
    window.workbench.view_actions["zoom_in"].trigger()
    assert window.graph.view.zoom() == pytest.approx(zoom * 1.25)
    window.workbench.view_actions["actual"].trigger()
    assert window.graph.view.zoom() == pytest.approx(1.0)
    window.editor.edit.setFocus()
    ctrl_alt = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
    qtbot.keyClick(window.editor.edit, Qt.Key.Key_S, ctrl_alt)
    assert window.graph.scene.splits  # the key works while the text has the focus
    test = next(a for a in phase.actions() if a.text() == "TEST")
    test.trigger()
    assert window.graph.scene.phase == 1


def test_help_lists_every_key_and_a_getting_started_page(qtbot, window):
    bench = window.workbench
    bench.shortcuts_action.trigger()
    text = bench.page.text.toPlainText()
    for expected in ("Zoom In", "Ctrl+0", "Duplicate", "Hide Panels", "F12", "Train", "F5", "Alt+3"):
        assert expected in text, expected
    bench.page.close()
    bench.getting_started_action.trigger()
    assert "Getting started" in bench.page.text.toPlainText()
    assert "Export Picture" in bench.page.text.toPlainText()
