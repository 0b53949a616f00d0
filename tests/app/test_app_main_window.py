"""The main window: opening, live text sync, one undo stack, save / save as, the close prompt."""

from __future__ import annotations

import pytest
from answers import Asked
from PySide6.QtCore import Qt

from app.commands import AddLayer, CommandError, RenameLayer, SetLayerField
from app.document import Document
from app.files import DEFAULT_NET, DEFAULT_SOLVER
from app.main_window import MainWindow, open_window

NET = """\
# a tiny net, with a comment that must survive
name: "tiny"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 1 dim: 8 dim: 8 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 4 kernel_size: 3 } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
"""


@pytest.fixture
def net_file(tmp_path):
    path = tmp_path / "tiny.prototxt"
    path.write_text(NET)
    return path


@pytest.fixture
def window(qtbot, net_file) -> MainWindow:
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = Asked("discard")  # never block a test on a dialog
    w.show_error = Asked(None)
    assert w.open_file(net_file)
    w.show()
    qtbot.waitExposed(w)
    return w


def type_after(qtbot, window: MainWindow, needle: str, keys: str) -> None:
    edit = window.editor.edit
    cursor = edit.textCursor()
    cursor.setPosition(window.editor.text.index(needle) + len(needle))
    edit.setTextCursor(cursor)
    qtbot.keyClicks(edit, keys)


@pytest.mark.skipif(not DEFAULT_NET.is_file(), reason="the LeNet example is not in resources/ yet")
def test_opens_the_lenet_example_as_an_untitled_copy_with_its_solver(qtbot):
    w = MainWindow()
    qtbot.addWidget(w)
    assert w.open_file(DEFAULT_SOLVER if DEFAULT_SOLVER.is_file() else DEFAULT_NET)
    assert w.windowTitle() == "Barista — LeNet (example)[*]" and w.doc.net_path is None
    assert not w.isWindowModified()
    w.graph.sync()
    assert w.doc.net.name == "LeNet" and len(w.doc.net.layer) > 5 and "conv1" in w.graph.scene.nodes
    assert w.editor.text == w.doc.net_text() and w.editor.text.startswith("# LeNet")
    if DEFAULT_SOLVER.is_file():
        assert w.doc.solver_path is None and w.doc.solver.max_iter > 0  # the example's, untitled too


def test_title_and_dirty_marker(window, net_file):
    assert window.windowTitle() == "Barista — tiny.prototxt[*]"
    assert not window.isWindowModified()
    window.push(SetLayerField(1, "convolution_param.num_output", 8))
    assert window.isWindowModified()
    assert window.undo_action.isEnabled() and "num_output" in window.undo_action.text()


def test_typing_changes_the_document_and_ctrl_z_restores(qtbot, window):
    type_after(qtbot, window, "num_output: 4", "2")
    qtbot.waitUntil(lambda: window.doc.layer(1).convolution_param.num_output == 42)
    window.graph.sync()  # the canvas follows the text
    conv1 = window.graph.scene.nodes["conv1"].node.layer
    assert window.isWindowModified() and conv1.convolution_param.num_output == 42
    window.activateWindow()
    window.editor.edit.setFocus()
    qtbot.keyClick(window.editor.edit, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.doc.layer(1).convolution_param.num_output == 4
    assert window.editor.text == NET and not window.isWindowModified()
    window.redo_action.trigger()
    assert window.doc.layer(1).convolution_param.num_output == 42


def test_a_syntax_error_is_marked_and_undo_drops_the_typing(qtbot, window):
    before = window.doc.net.SerializeToString()
    type_after(qtbot, window, 'type: "ReLU"', " }")
    qtbot.waitUntil(lambda: window.editor.error is not None)
    assert window.editor.edit.error_line == 6
    assert window.doc.net.SerializeToString() == before
    assert window.undo_action.isEnabled()  # undo drops the text that does not parse
    window.undo_action.trigger()
    assert window.editor.text == NET and window.editor.error is None


def test_edits_from_other_views_apply_pending_text_first(qtbot, window):
    type_after(qtbot, window, "num_output: 4", "0")
    window.push(RenameLayer(2, "act"))  # before the debounce fires
    assert window.doc.layer(1).convolution_param.num_output == 40
    assert window.doc.layer(2).name == "act" and 'name: "act"' in window.editor.text
    window.undo()
    assert window.doc.layer(2).name == "relu1" and window.doc.layer(1).convolution_param.num_output == 40
    window.undo()
    assert window.editor.text == NET
    with pytest.raises(CommandError):
        window.push(RenameLayer(2, "conv1"))


def test_save_then_reopen_gives_an_equal_net(qtbot, window, net_file):
    window.push(AddLayer(window.doc.new_layer("Pooling")))
    type_after(qtbot, window, 'name: "tiny', "er")
    assert window.save()  # applies the typed text first
    assert not window.isWindowModified()
    other = Document()
    other.open_net(net_file)
    assert other.net == window.doc.net and other.net.name == "tinyer"
    assert not list(net_file.parent.glob(".*.tmp"))


def test_save_as_writes_the_new_file_and_retitles(qtbot, window, tmp_path):
    target = tmp_path / "copy.prototxt"
    window.ask_save_path = Asked(str(target))
    window.push(SetLayerField(1, "convolution_param.num_output", 7))
    assert window.save_as()
    assert window.windowTitle() == "Barista — copy.prototxt[*]" and not window.isWindowModified()
    reopened = MainWindow()
    qtbot.addWidget(reopened)
    assert reopened.open_file(target)
    assert reopened.doc.net == window.doc.net
    window.ask_save_path = Asked("")  # cancelled
    assert not window.save_as()


def test_open_dialog_and_a_bad_file(qtbot, window, tmp_path):
    bad = tmp_path / "bad.prototxt"
    bad.write_text("layer { name: ")
    window.ask_open_path = Asked(str(bad))
    window.open_dialog()
    assert window.show_error.count == 1 and window.doc.layer_names() == ["data", "conv1", "relu1"]


def test_close_prompts_only_with_unsaved_changes(qtbot, window, net_file):
    window.ask_unsaved_changes = Asked("cancel")
    assert window.close()  # clean: closes without asking
    assert window.ask_unsaved_changes.count == 0

    window.show()
    window.push(SetLayerField(1, "convolution_param.num_output", 9))
    assert not window.close() and window.isVisible()  # cancelled
    assert window.ask_unsaved_changes.count == 1

    window.ask_unsaved_changes = Asked("save")
    assert window.close()
    other = Document()
    other.open_net(net_file)
    assert other.layer(1).convolution_param.num_output == 9


def test_close_asks_about_text_that_does_not_parse(qtbot, window, net_file):
    type_after(qtbot, window, 'name: "tiny"', " {")
    window.ask_unparsable_text = Asked("edit")
    assert not window.close()  # keep editing
    assert window.ask_unparsable_text.count == 1 and " {" in window.editor.text
    assert window.ask_unsaved_changes.count == 0 and net_file.read_text() == NET
    window.ask_unparsable_text = Asked("discard")
    assert window.close() and net_file.read_text() == NET


def test_opening_a_file_clears_the_undo_stack(qtbot, window, net_file):
    window.push(SetLayerField(1, "convolution_param.num_output", 9))
    assert window.open_file(net_file)
    assert not window.undo_stack.canUndo() and window.editor.text == NET


def test_screenshot(qtbot, window, tmp_path):
    window.resize(1200, 760)
    # A shown window takes its new size from the platform's answer: wait for that, not for a time.
    qtbot.waitUntil(lambda: (window.width(), window.height()) == (1200, 760), timeout=10_000)
    assert window.grab().save(str(tmp_path / "window.png"))


@pytest.mark.skipif(not DEFAULT_SOLVER.is_file(), reason="the LeNet solver is not in resources/ yet")
def test_open_window_starts_on_the_example_or_a_given_file(qtbot, net_file):
    default = open_window(["main.py"])
    qtbot.addWidget(default)
    assert default.isVisible() and default.doc.net.name == "LeNet"
    given = open_window(["main.py", str(net_file)])
    qtbot.addWidget(given)
    assert given.doc.net_path == str(net_file)
