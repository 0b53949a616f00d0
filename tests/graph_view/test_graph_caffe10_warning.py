"""A layer Caffe 1.0 lacks (Clip) is a warning of its own kind on the canvas and in the problems list.

The scene gathers ``validate(graph) + caffe10_problems(graph)``.
"""

from __future__ import annotations

import pytest
from graph_view_support import EXAMPLES, net_of
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QStyleOptionGraphicsItem

from graph_view import render, style
from graph_view.problems import NEWER, ProblemList
from graph_view.validation import ERROR, WARNING, Problem, validate
from proto import caffe10

CLIP_NET = """
name: "clipped"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 dim: 8 dim: 8 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 4 kernel_size: 3 } }
layer { name: "act" type: "Clip" bottom: "conv1" top: "act" clip_param { min: 0 max: 6 } }
layer { name: "relu" type: "ReLU" bottom: "act" top: "act" }
"""
PLAIN_NET = CLIP_NET.replace('type: "Clip"', 'type: "ReLU"').replace("clip_param { min: 0 max: 6 }", "")


def _badge_colour(item, problems: list[Problem]) -> QColor:
    """Paint ``item`` with ``problems`` and read the badge's fill, left of its "!"."""
    item.problems = problems
    r = item.rect
    image = QImage(int(r.width()) + 40, int(r.height()) + 40, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.translate(-r.left() + 20, -r.top() + 20)
    item.paint(painter, QStyleOptionGraphicsItem())
    painter.end()
    centre = QPointF(r.right() - 2, r.top() + 2) + QPointF(-r.left() + 20, -r.top() + 20)
    return image.pixelColor(int(centre.x()) - 4, int(centre.y()) + 3)


def test_a_clip_layer_gets_one_warning_of_the_newer_kind(qapp):
    s = render.make_scene(net_of(CLIP_NET))
    newer = [p for p in s.problems if p.severity == NEWER]
    assert [(p.key, p.message) for p in newer] == [("act", "layer type Clip came after Caffe 1.0")]
    assert newer[0].index == 2  # the document's layer, so a click selects it
    item = s.nodes["act"]
    assert item.problems == newer
    assert "⚠ layer type Clip came after Caffe 1.0" in item.toolTip()


def test_its_badge_is_the_warning_badge(qapp):
    s = render.make_scene(net_of(CLIP_NET))  # (held: the items die with their scene)
    item = s.nodes["act"]
    assert _badge_colour(item, list(item.problems)) == QColor(style.WARNING)
    assert _badge_colour(item, [Problem(ERROR, "act", 2, "x")]) == QColor(style.ERROR)
    assert _badge_colour(item, []) not in (QColor(style.WARNING), QColor(style.ERROR))


def test_the_problem_list_shows_the_text_and_the_caffe10_tooltip(qtbot):
    listing = ProblemList()
    qtbot.addWidget(listing)
    other = Problem(WARNING, "data", 0, "shapes unknown: no such file")
    listing.show_problems([Problem(NEWER, "act", 2, "layer type Clip came after Caffe 1.0"), other])
    rows = [listing.item(i) for i in range(listing.count())]
    assert [row.text() for row in rows] == [
        "⚠  data: shapes unknown: no such file",
        "⚠  act: layer type Clip came after Caffe 1.0",
    ]
    assert rows[1].toolTip() == caffe10.TOOLTIP == "needs a Caffe newer than 1.0 (BVLC master)"
    assert rows[0].toolTip() == "shapes unknown: no such file"
    assert rows[1].foreground().color() == rows[0].foreground().color()  # the warning colour
    with qtbot.waitSignal(listing.problem_clicked) as clicked:
        listing.itemClicked.emit(rows[1])
    assert clicked.args == ["act"]


def test_nothing_else_changes(qapp):
    clipped, plain = render.make_scene(net_of(CLIP_NET)), render.make_scene(net_of(PLAIN_NET))
    assert [p for p in clipped.problems if p.severity != NEWER] == validate(clipped.graph) == []
    assert plain.problems == []
    assert clipped.graph.nodes["act"].top_shapes == plain.graph.nodes["act"].top_shapes
    assert [n.problems for k, n in clipped.nodes.items() if k != "act"] == [[], []]


@pytest.mark.parametrize("name", ["mnist/lenet_train_test.prototxt", "caffenet.prototxt", "resnet.prototxt"])
def test_example_nets_get_no_newer_warning(qapp, name):
    s = render.make_scene(net_of((EXAMPLES / name).read_text()))
    assert not [p for p in s.problems if p.severity == NEWER]
    assert s.problems == validate(s.graph)


def test_an_in_place_clip_band_gets_the_warning_too(qapp):
    s = render.make_scene(net_of(CLIP_NET.replace('top: "act" clip_param', 'top: "conv1" clip_param')))
    newer = [p for p in s.problems if p.severity == NEWER]
    assert [p.message for p in newer] == ["layer type Clip came after Caffe 1.0"]
    band = next(b for b in s.nodes["conv1"].band_items if b.key == newer[0].key)
    assert band.problems == newer
