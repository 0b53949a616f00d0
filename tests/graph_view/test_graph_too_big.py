"""#30 case 9: a net past the canvas's limit opens without freezing the window: no boxes are laid out or
made (a 20,000-layer chain blocked ~17 s and took ~1 GB), the canvas says why in words, the totals count
the layers, and a net back under the limit is drawn again."""

from __future__ import annotations

from app.main_window import MainWindow
from graph_view import scene as scene_module
from graph_view.items import NodeItem


def chain(tmp_path, layers: int):
    lines = [
        'name: "chain"',
        'layer { name: "data" type: "Input" top: "b0" input_param { shape { dim: 1 } } }',
    ]
    lines += [
        f'layer {{ name: "r{i}" type: "ReLU" bottom: "b{i}" top: "b{i + 1}" }}' for i in range(layers - 1)
    ]
    path = tmp_path / f"chain{layers}.prototxt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_net_past_the_limit_is_described_not_drawn(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(scene_module, "CANVAS_LIMIT", 40)  # the real limit is 3,000; the rule is the same
    w = MainWindow()
    qtbot.addWidget(w)
    assert w.open_file(chain(tmp_path, 41))
    w.graph.sync()
    scene = w.graph.scene
    assert not [item for item in scene.items() if isinstance(item, NodeItem)]
    notes = [item.toPlainText() for item in scene.items() if hasattr(item, "toPlainText")]
    assert any("41 layers" in note and "up to 40" in note for note in notes)
    assert w.graph.totals.text() == "41 layers · too many to draw"
    assert len(w.doc.net.layer) == 41 and "r39" in w.editor.text  # the other views have the whole net

    assert w.open_file(chain(tmp_path, 40))  # under the limit: drawn as usual
    w.graph.sync()
    assert len([item for item in scene.items() if isinstance(item, NodeItem)]) == 40
