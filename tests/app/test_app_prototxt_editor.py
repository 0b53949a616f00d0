"""The prototxt editor: text -> document after the debounce, document -> text in place, errors marked."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from tiny_net import NET

from app.commands import SetLayerField
from app.prototxt_editor import PrototxtEditor


@pytest.fixture
def editor(qtbot, doc, history) -> PrototxtEditor:
    widget = PrototxtEditor(doc, history.push, delay_ms=50)
    qtbot.addWidget(widget)
    widget.resize(600, 400)
    widget.show()
    return widget


def put_cursor_after(editor: PrototxtEditor, needle: str) -> None:
    cursor = editor.edit.textCursor()
    cursor.setPosition(editor.text.index(needle) + len(needle))
    editor.edit.setTextCursor(cursor)


def test_shows_the_documents_text(editor, doc):
    assert editor.text == NET
    assert editor.error is None and not editor.revert_button.isVisible()


def test_typing_valid_text_changes_the_document_after_the_debounce(qtbot, editor, doc, history):
    put_cursor_after(editor, "num_output: 4")
    qtbot.keyClick(editor.edit, Qt.Key.Key_Backspace)
    qtbot.keyClicks(editor.edit, "16")
    assert doc.layer(1).convolution_param.num_output == 4  # not before the pause
    qtbot.waitUntil(lambda: doc.layer(1).convolution_param.num_output == 16)
    assert doc.net_text() == editor.text  # the comment is kept in the document's text
    assert doc.dirty and history.can_undo
    history.undo()
    assert editor.text == NET and doc.layer(1).convolution_param.num_output == 4


def test_a_syntax_error_is_marked_and_the_document_keeps_its_net(qtbot, editor, doc):
    before = doc.net.SerializeToString()
    put_cursor_after(editor, "num_")
    qtbot.keyClicks(editor.edit, "x")  # num_xoutput: no such field
    qtbot.waitUntil(lambda: editor.error is not None)
    assert (editor.error.line, editor.error.column) == (5, 29)
    assert editor.edit.error_line == 5
    assert "num_xoutput" in editor.status.text() and "Line 5" in editor.status.text()
    assert editor.revert_button.isVisible()
    assert doc.net.SerializeToString() == before and not doc.dirty
    assert "num_xoutput" in editor.text  # nothing typed is lost
    marks = [s for s in editor.edit.extraSelections() if s.cursor.hasSelection()]
    assert marks and marks[-1].cursor.selectedText() == "num_xoutput"

    qtbot.keyClick(editor.edit, Qt.Key.Key_Backspace)  # back to num_output, then change the value
    put_cursor_after(editor, "num_output: 4")
    qtbot.keyClicks(editor.edit, "0")
    qtbot.waitUntil(lambda: doc.layer(1).convolution_param.num_output == 40)
    assert editor.error is None and editor.edit.error_line is None


def test_document_edits_re_render_and_keep_the_cursor(qtbot, editor, doc, history):
    history.push(SetLayerField(1, "convolution_param.num_output", 8))  # now the canonical text
    assert editor.text == doc.net_text() and "num_output: 8" in editor.text
    put_cursor_after(editor, 'name: "relu1"')
    line, column = editor.edit.textCursor().blockNumber(), editor.edit.textCursor().positionInBlock()
    history.push(SetLayerField(1, "convolution_param.num_output", 128))
    assert "num_output: 128" in editor.text
    cursor = editor.edit.textCursor()
    assert (cursor.blockNumber(), cursor.positionInBlock()) == (line, column)
    assert not editor.has_pending_text()


def test_text_with_an_error_survives_an_edit_elsewhere(qtbot, editor, doc, history):
    put_cursor_after(editor, 'name: "tiny"')
    qtbot.keyClicks(editor.edit, " {")
    qtbot.waitUntil(lambda: editor.error is not None)
    typed = editor.text
    history.push(SetLayerField(1, "convolution_param.num_output", 8))
    assert editor.text == typed
    assert "changed elsewhere" in editor.status.text()
    editor.revert()
    assert editor.text == doc.net_text() and editor.error is None


def test_commit_now_and_revert(qtbot, editor, doc):
    editor.edit.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.keyClicks(editor.edit, "# the end")
    qtbot.keyClick(editor.edit, Qt.Key.Key_Return)
    assert editor.has_pending_text()
    assert editor.commit()  # no waiting: what Save and Undo do first
    assert doc.net_text().endswith("# the end\n") and doc.dirty


@pytest.mark.parametrize(
    "line, position, kind",
    [
        ('  name: "conv1"  # note', 3, "field"),
        ('  name: "conv1"  # note', 10, "string"),
        ('  name: "conv1"  # note', 20, "comment"),
        ('  name: "a # b"', 11, "string"),
        ("  convolution_param {", 4, "section"),
        ("  convolution_param {", 20, "brace"),
        ("  num_output: 20", 14, "number"),
        ("  scale: -1.5e-3", 10, "number"),
        ("  pool: MAX", 9, "enum"),
        ("  include { phase: TEST }", 20, "enum"),
        ("  bias_term: false", 14, "enum"),
    ],
)
def test_highlighter_kinds(editor, line, position, kind):
    assert editor.highlighter.kind_at(line, position) == kind


def test_text_nested_thousands_deep_is_marked_not_a_crash(qtbot, editor, doc):
    """#30 case 2 in the Prototxt tab: 3,000 nested blocks raised RecursionError from the parser."""
    before = doc.net.SerializeToString()
    deep = NET + 'layer { name: "r" type: "ReLU" ' + "include { " * 3000 + "} " * 3000 + "}\n"
    editor.edit.setPlainText(deep)
    qtbot.waitUntil(lambda: editor.error is not None)
    assert "nested more than 100 deep" in editor.status.text()
    assert doc.net.SerializeToString() == before and editor.text == deep  # the net kept, the text too
