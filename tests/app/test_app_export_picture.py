"""File > Export Picture: the whole net or the selected boxes, PNG or SVG, drawn as ``main.py draw``
draws it; dialogs start beside the net, or in the user's documents, never in the program's folder."""

from __future__ import annotations

import os
import struct

import pytest
from windows import open_window

from app.files import EXAMPLES, is_installed


@pytest.fixture
def window(qtbot):
    w = open_window(qtbot, EXAMPLES / "mnist" / "lenet_train_test.prototxt", size=None, errors_fail=True)
    w.graph.sync()
    yield w
    w.training.shutdown()


def png_size(path) -> tuple[int, int]:
    with open(path, "rb") as f:
        data = f.read(24)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_export_the_whole_net_and_the_selection(qtbot, window, tmp_path):
    asked = []
    window.ask_picture_path = lambda default: asked.append(default) or str(tmp_path / "net.png")
    bench = window.workbench
    bench.export_picture_action.trigger()
    # an example is an untitled copy: its picture is proposed outside the installed resources/
    assert not is_installed(asked[0]) and not asked[0].startswith(str(EXAMPLES))
    assert asked[0].endswith(".png")
    whole = png_size(tmp_path / "net.png")

    names = [layer.name for layer in window.doc.net.layer]
    window.selection.select([names.index("conv1"), names.index("pool1")])
    window.ask_picture_path = lambda default: str(tmp_path / "part.svg")
    bench.export_selection_action.trigger()
    svg = (tmp_path / "part.svg").read_text()
    assert "conv1" in svg and "pool1" in svg and "conv2" not in svg and "ip1" not in svg
    window.ask_picture_path = lambda default: str(tmp_path / "part.png")
    bench.export_selection_action.trigger()
    part = png_size(tmp_path / "part.png")
    assert part[1] < whole[1] / 3  # two boxes of the nine rows, not the net
    assert len(window.selection.layers) == 2  # exporting leaves the selection as it was


def test_export_selection_with_nothing_selected_says_so(qtbot, window, tmp_path):
    window.ask_picture_path = lambda default: pytest.fail("no dialog without a selection")
    window.workbench.export_selection_action.trigger()
    assert "Select the boxes" in window.statusBar().currentMessage()


def test_first_save_as_of_a_new_net_starts_in_the_documents_not_the_program(
    qtbot, window, monkeypatch, tmp_path
):
    home = tmp_path / "home"
    (home / "Documents").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(EXAMPLES)  # the program's folder, as when started from there
    window.workbench.new_document()
    folder = window._folder()
    assert folder != os.getcwd() and folder.startswith(str(home))


def test_a_picture_past_the_limits_is_refused_in_words(qtbot, window, tmp_path, monkeypatch):
    """#30 case 8 in the window: the same limits as `main.py draw`, said in the error box."""
    from graph_view import render

    monkeypatch.setattr(render, "MAX_BOXES", 5)  # LeNet's TRAIN net has 8 boxes
    said: list[str] = []
    window.show_error = lambda title, text: said.append(f"{title}: {text}")
    window.ask_picture_path = lambda default: str(tmp_path / "net.png")
    window.workbench.export_picture_action.trigger()
    assert said == [
        "Cannot export the picture: the net has 8 boxes, more than a picture can show (5); "
        "`main.py shapes` lists every layer"
    ]
    assert not (tmp_path / "net.png").exists()
