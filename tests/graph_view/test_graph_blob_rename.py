"""Renaming a blob from its wire label on the canvas: a real double-click opens an editor in place,
Enter renames the blob everywhere it is read or written (one undoable command), Escape cancels, and
an empty or taken name is refused with a message while the document stays as it was."""

from __future__ import annotations

import pytest
from graph_view_support import FORK, net_of, shown_editor
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLineEdit

from app.document import Document
from graph_view.editor import GraphEditor

LEFT, NO_MOD = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier


@pytest.fixture
def canvas(qtbot):
    doc = Document()
    doc.load_net(net_of(FORK))
    editor, stack = shown_editor(qtbot, doc, (1000, 700))
    editor.sync()
    editor.view.fit()
    return editor, doc, stack


def label_point(editor: GraphEditor, key: str, slot: int = 0) -> QPoint:
    label = editor.scene.label_of(key, slot)
    assert label is not None and label.isVisible()
    return editor.view.mapFromScene(label.mapToScene(label.boundingRect().center()))


def open_editor(editor: GraphEditor, key: str) -> QLineEdit:
    QTest.mouseDClick(editor.view.viewport(), LEFT, NO_MOD, label_point(editor, key))
    edit = editor.view.viewport().findChild(QLineEdit, "blobRenameEdit")
    assert edit is not None and edit.isVisible() and edit.hasFocus()
    return edit


def blobs(doc: Document) -> list[tuple[list[str], list[str]]]:
    return [(list(layer.bottom), list(layer.top)) for layer in doc.net.layer]


def test_enter_renames_the_blob_its_in_place_chain_and_readers_then_undo(canvas, qtbot):
    editor, doc, stack = canvas
    before = blobs(doc)
    edit = open_editor(editor, "conv_b")
    assert edit.text() == "conv_b" and edit.selectedText() == "conv_b"  # typing replaces the name
    QTest.keyClicks(edit, "branch")
    QTest.keyClick(edit, Qt.Key.Key_Return)

    layers = doc.net.layer
    assert [layer.name for layer in layers] == [
        "input",
        "conv_a",
        "conv_b",
        "relu_b",
        "sum",
    ]  # layers keep names
    assert list(layers[2].top) == ["branch"]
    assert list(layers[3].bottom) == ["branch"] and list(layers[3].top) == ["branch"]  # in place, still
    assert list(layers[4].bottom) == ["conv_a", "branch"]
    assert list(layers[1].bottom) == ["data"] and list(layers[2].bottom) == ["data"]  # other blobs untouched
    assert stack.undoText() == "Rename blob 'conv_b' to 'branch'"
    assert editor.view.viewport().findChild(QLineEdit, "blobRenameEdit") is None

    editor.sync()  # the canvas redraws from the document: the label reads the new name
    assert editor.scene.label_of("conv_b", 0).name == "branch"
    stack.undo()  # one step takes the whole rename back
    assert blobs(doc) == before
    stack.redo()
    assert list(doc.net.layer[4].bottom) == ["conv_a", "branch"]


def test_a_blob_read_by_two_layers_renames_at_both(canvas):
    editor, doc, _stack = canvas
    edit = open_editor(editor, "input")
    assert edit.text() == "data"
    QTest.keyClicks(edit, "pixels")
    QTest.keyClick(edit, Qt.Key.Key_Enter)  # the keypad's Enter too
    assert [list(layer.bottom) for layer in doc.net.layer[:3]] == [[], ["pixels"], ["pixels"]]
    assert list(doc.net.layer[0].top) == ["pixels"]


def test_escape_cancels_and_leaves_the_document_alone(canvas):
    editor, doc, stack = canvas
    before = blobs(doc)
    edit = open_editor(editor, "conv_b")
    QTest.keyClicks(edit, "something")
    QTest.keyClick(edit, Qt.Key.Key_Escape)
    assert blobs(doc) == before and not stack.canUndo() and not doc.dirty
    assert editor.view.viewport().findChild(QLineEdit, "blobRenameEdit") is None


@pytest.mark.parametrize(
    ("typed", "words"),
    [("conv_a", ["'conv_a' already exists"]), ("", ["needs a name", "'conv_b' keeps its name"])],
)
def test_a_taken_or_empty_name_is_refused_with_a_message(canvas, typed, words):
    editor, doc, stack = canvas
    before = blobs(doc)
    edit = open_editor(editor, "conv_b")
    QTest.keyClick(edit, Qt.Key.Key_Backspace)  # clear the selected name
    QTest.keyClicks(edit, typed)
    QTest.keyClick(edit, Qt.Key.Key_Return)
    assert blobs(doc) == before and not stack.canUndo() and not doc.dirty
    message = editor.status.text()
    assert all(w in message for w in words), message


def test_no_blob_rename_in_the_split_overlay_and_a_box_double_click_still_renames_the_layer(canvas):
    editor, doc, _stack = canvas
    editor.toolbar.splits.click()
    editor.sync()
    QTest.mouseDClick(editor.view.viewport(), LEFT, NO_MOD, label_point(editor, "conv_b"))
    assert editor.view.viewport().findChild(QLineEdit, "blobRenameEdit") is None  # read-only overlay
    editor.toolbar.splits.click()
    editor.sync()
    node = editor.scene.nodes["conv_a"]
    header = editor.view.mapFromScene(node.mapToScene(node.header_rect().center()))
    QTest.mouseDClick(editor.view.viewport(), LEFT, NO_MOD, header)
    assert editor.view.viewport().findChild(QLineEdit, "blobRenameEdit") is None
    assert editor.view.viewport().findChild(QLineEdit, "renameEdit").text() == "conv_a"
