"""Issue 31 case 13: Find (Ctrl+F) finds boxes on the canvas too, on a net far taller than the canvas:
the boxes whose names or types match are ringed and counted, and the match the bar walks to selects
its layer's box and brings it into view; a match already on screen leaves the canvas where it is."""

from __future__ import annotations

import sys
from pathlib import Path

from windows import asked_window

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "graph_view"))
from real_nets import write_googlenet


def test_find_brings_a_matching_box_into_view(qtbot, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    window = asked_window(qtbot)
    assert window.open_file(write_googlenet(tmp_path))
    graph = window.graph
    graph.sync()
    view, scene = graph.view, graph.scene
    view.resetTransform()  # 100 %: the net is far taller than the canvas
    view.centerOn(scene.nodes["data"])

    def on_screen(key: str) -> bool:
        visible = view.mapToScene(view.viewport().rect()).boundingRect()
        return visible.intersects(scene.nodes[key].sceneBoundingRect())

    assert not on_screen("loss1/classifier")
    window.workbench.find_action.trigger()
    bar = window.workbench.find_bar
    bar.find_field.setText("loss1/classifier")
    assert scene.found == {"loss1/classifier"} and "1 box" in bar.count.text()
    assert on_screen("loss1/classifier")
    assert window.selection.current == window.doc.index_of("loss1/classifier")
    centre = view.mapToScene(view.viewport().rect().center())
    bar.find_field.setText("loss1/")  # loss1/classifier is on screen already: the canvas stays
    assert len(scene.found) > 1 and view.mapToScene(view.viewport().rect().center()) == centre
    bar.find_field.setText("conv1")  # conv1/7x7_s2, far below: brought into view
    assert on_screen("conv1/7x7_s2")
