"""Issue 31 case 13: in the Splits view a Split's copies were labelled with their whole blob names
stacked above the box (``pool2/3x3_s2_pool2/3x3_s2_0_split_3  32×192×28×28`` four times), running into
the boxes above; now each copy reads ``split_N`` at its own port in one row, the shape once."""

from __future__ import annotations

from pathlib import Path

from graph_view_support import shown_editor
from real_nets import write_googlenet

from app.document import Document
from graph_view.items import NodeItem
from graph_view.wires import BlobLabel


def test_split_copies_are_labelled_in_one_row_clear_of_other_boxes(qtbot, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the LMDBs are absent: the shapes come from the deploy net beside it
    doc = Document()
    doc.open_net(write_googlenet(tmp_path))
    editor, _ = shown_editor(qtbot, doc, active=False)
    editor.toolbar.splits.click()  # the Splits view, as the toolbar's button shows it
    editor.sync()
    scene = editor.scene
    assert scene.splits
    splits = [item for item in scene.nodes.values() if item.node.layer.type == "Split"]
    assert len(splits) >= 3
    boxes = [item for item in scene.nodes.values() if isinstance(item, NodeItem)]
    for split in splits:
        labels = [c for c in split.childItems() if isinstance(c, BlobLabel)]
        assert [label.name for label in labels] == [f"split_{i}" for i in range(len(split.node.layer.top))]
        assert [bool(label.shape_text) for label in labels] == [False] * (len(labels) - 1) + [True]
        rects = [label.mapRectToScene(label.boundingRect()) for label in labels]
        for i, rect in enumerate(rects):
            assert not any(rect.intersects(other) for other in rects[i + 1 :]), split.key
            crossed = [b.key for b in boxes if b is not split and rect.intersects(b.sceneBoundingRect())]
            assert crossed == [], (split.key, labels[i].name, crossed)
        assert labels[0].toolTip() == f"blob {split.node.layer.top[0]}"  # the whole name on hover
