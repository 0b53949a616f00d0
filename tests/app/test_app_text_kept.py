"""The text is the user's: every edit through the document's commands, on every example net and
every net among the tests' data, rewrites only the edited layer's lines, reads back as the net the
edit made, never falls back to rendering the whole file, and undo brings the text back byte for byte."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gestures import retype
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest
from undo_history import History

from app import netio
from app.commands import (
    AddLayer,
    Command,
    Connect,
    Disconnect,
    MoveLayer,
    RemoveLayer,
    RenameLayer,
    ReplaceLayer,
    SetLayerField,
)
from app.document import Document
from app.fields import copy_message
from app.form_edits import solver_edit
from app.layer_spans import layer_spans
from proto import caffe_pb2
from proto.textio import parse_net

ROOT = Path(__file__).parents[2]
NETS = sorted(
    [p for p in (ROOT / "resources" / "examples").rglob("*.prototxt") if "solver" not in p.name]
    + list((ROOT / "tests" / "data").rglob("net.prototxt"))
    + list((ROOT / "tests" / "data" / "text_styles").glob("*.prototxt"))
)
MOST_LAYERS = 10  # a larger net is edited at this many layers, spread over it (the test stays fast)


def layer_lines(text: str, index: int) -> tuple[int, int]:
    """The lines layer ``index``'s block stands on: from its line's start through its newline."""
    start, end = layer_spans(text)[index]
    start = text.rfind("\n", 0, start) + 1
    newline = text.find("\n", end)
    return start, len(text) if newline < 0 else newline + 1


def without(text: str, index: int) -> str:
    start, end = layer_lines(text, index)
    return text[:start] + text[end:]


def first_scalar(message, path: str = "") -> tuple[str, object] | None:
    """The first singular number, word or switch set inside ``message`` (depth first)."""
    for fd, value in message.ListFields():
        here = f"{path}{fd.name}"
        if fd.name in ("name", "type"):
            continue
        if fd.message_type is not None:
            items = list(value) if fd.is_repeated else [value]
            for k, item in enumerate(items):
                found = first_scalar(item, f"{here}.{k}." if fd.is_repeated else f"{here}.")
                if found:
                    return found
        elif not fd.is_repeated:
            return here, _another(fd, value)
    return None


def _another(fd, value):
    if fd.enum_type is not None:
        numbers = [v.number for v in fd.enum_type.values]
        return numbers[(numbers.index(value) + 1) % len(numbers)]
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return value + "_b"
    return value * 2 + 1


def retyped(layer: caffe_pb2.LayerParameter) -> caffe_pb2.LayerParameter:
    new = copy_message(layer)
    new.type = "TanH" if layer.type != "TanH" else "Sigmoid"
    for fd, _ in layer.ListFields():
        if fd.name.endswith("_param") and fd.name != "transform_param":
            new.ClearField(fd.name)
    return new


def in_place_edits(doc: Document, i: int) -> Iterator[Command]:
    """Edits that change layer ``i`` and nothing else: set a value, add and remove a field, retype,
    rename, connect, disconnect and rewire a bottom."""
    layer = doc.layer(i)
    scalar = first_scalar(layer)
    if scalar is not None:
        yield SetLayerField(i, *scalar)
    yield SetLayerField(i, f"param.{len(layer.param)}.lr_mult", 3.0)
    present = [fd.name for fd, _ in layer.ListFields() if fd.name.endswith("_param") or fd.name == "include"]
    yield SetLayerField(i, (present or ["top"])[0], None)
    yield ReplaceLayer(i, retyped(layer), "retype")
    yield RenameLayer(i, layer.name + "_renamed")
    yield Connect(i, "data")
    if layer.bottom:
        yield Disconnect(i, 0)
        yield Connect(i, "elsewhere", slot=0)


def spread(count: int) -> list[int]:
    if count <= MOST_LAYERS:
        return list(range(count))
    return sorted({round(k * (count - 1) / (MOST_LAYERS - 1)) for k in range(MOST_LAYERS)})


@pytest.fixture
def fallbacks(monkeypatch) -> list[str]:
    """The texts the patch gave up on (the document then renders the net below the header)."""
    seen: list[str] = []
    patch = netio.patch_text

    def watched(text, old, new):
        result = patch(text, old, new)
        if result is None:
            seen.append(text)
        return result

    monkeypatch.setattr(netio, "patch_text", watched)
    return seen


def check(doc: Document, history: History, command: Command, same: Callable[[str, str], bool]) -> None:
    before, net_before = doc.net_text(), copy_message(doc.net)
    history.push(command)
    after = doc.net_text()
    assert parse_net(after, upgrade=False) == doc.net, command.text  # the text is the net the edit made
    assert same(before, after), command.text
    history.undo()
    assert doc.net_text() == before and doc.net == net_before, command.text  # byte for byte


@pytest.mark.parametrize("path", NETS, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_edit_rewrites_only_the_edited_layers_lines_and_undo_restores_the_text(path, fallbacks):
    doc = Document()
    doc.open_net(path)
    history = History(doc)
    count = len(doc.net.layer)
    for i in spread(count):
        for command in in_place_edits(doc, i):

            def only_layer_i(before: str, after: str, i: int = i) -> bool:
                (s0, e0), (s1, e1) = layer_spans(before)[i], layer_spans(after)[i]
                return s0 == s1 and before[:s0] == after[:s1] and before[e0:] == after[e1:]

            check(doc, history, command, only_layer_i)

        added = caffe_pb2.LayerParameter(name="added", type="ReLU", bottom=["data"], top=["data"])
        check(doc, history, AddLayer(added, i), lambda before, after, i=i: without(after, i) == before)
        check(doc, history, RemoveLayer(i), lambda before, after, i=i: without(before, i) == after)
        if i > 0:

            def moved(before: str, after: str, i: int = i) -> bool:
                start, end = layer_lines(before, i)
                block = before[start:end]
                return without(before, i) == without(after, i - 1) and block.rstrip("\n") in after

            check(doc, history, MoveLayer(i, i - 1), moved)
    assert fallbacks == []


def test_a_text_the_patch_cannot_follow_keeps_its_header_above_the_rendered_net(tmp_path):
    text = '# my notes\nname: "n"\nlayer { name: "a" type: "ReLU" param: [{ lr_mult: 1 }] }\n'
    path = tmp_path / "listed.prototxt"
    path.write_text(text)
    doc = Document()
    doc.open_net(path)
    History(doc).push(SetLayerField(0, "param.0.lr_mult", 2.0))
    assert doc.net_text().startswith('# my notes\nname: "n"\nlayer {\n')  # rendered, the notes kept
    assert parse_net(doc.net_text()) == doc.net


def test_solver_edits_keep_the_solvers_comments():
    path = ROOT / "resources" / "examples" / "mnist" / "lenet_solver.prototxt"
    doc = Document()
    doc.open_solver(path)
    history, text = History(doc), path.read_text()
    history.push(solver_edit(doc, "base_lr", 0.05))
    history.push(solver_edit(doc, "lr_policy", "step"))  # with the stepsize it needs, in Caffe's order
    assert _changed_lines(text, doc.solver_text()) == (
        ["base_lr: 0.01", 'lr_policy: "inv"'],
        ["base_lr: 0.05", 'lr_policy: "step"', "stepsize: 3333"],
    )
    history.undo()
    history.undo()
    assert doc.solver_text() == text


# ---- the user's scenario, in the window ----------------------------------------------------------
def _click_box(qtbot, window, key: str) -> None:
    graph = window.graph
    node = graph.scene.nodes[key]
    graph.view.centerOn(node)
    point = graph.view.mapFromScene(node.mapToScene(node.header_rect().center() + QPointF(-20, 0)))
    QTest.mouseClick(graph.view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
    qtbot.waitUntil(lambda: window.selection.current == graph.scene.graph.index_of(key))


def _changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


def test_an_inspector_edit_in_the_window_keeps_every_comment(qtbot, lenet_window):
    window = lenet_window
    original = window.editor.text
    assert original.startswith("# LeNet") and "# ---- inputs" in original
    _click_box(qtbot, window, "conv1")
    spin = window.workbench.inspector.editor("convolution_param.num_output")
    spin.setFocus()
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "16")
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: window.doc.layer(2).convolution_param.num_output == 16)
    # the Prototxt tab keeps the header, the section comments and the one-line blocks:
    # the num_output line is the only one changed
    assert _changed_lines(original, window.editor.text) == (["    num_output: 20"], ["    num_output: 16"])
    assert window.doc.net_text() == window.editor.text

    _click_box(qtbot, window, "pool1")
    retype(qtbot, window.workbench.inspector.editor("type"), "ReLU")
    assert window.doc.layer(3).type == "ReLU"
    assert _changed_lines(original, window.editor.text) == (
        ["    num_output: 20", '  type: "Pooling"', "  pooling_param { pool: MAX kernel_size: 2 stride: 2 }"],
        ["    num_output: 16", '  type: "ReLU"'],
    )
    window.undo_action.trigger()
    window.undo_action.trigger()
    assert window.editor.text == original  # byte for byte
