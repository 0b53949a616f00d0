"""The automatic layout: no box overlaps another, data flows one way, and branches do not cross."""

from __future__ import annotations

import itertools

import pytest
from graph_view_support import EXAMPLE_NETS, FORK, net_of

from bench.graph_scale import resnet152
from graph_view.layout import LayoutEdge, _crossings, layered
from graph_view.render import make_scene
from proto import caffe_pb2
from proto.textio import read_net


def _overlaps(scene) -> list[tuple[str, str]]:
    boxes = [(key, item.sceneBoundingRect()) for key, item in scene.nodes.items()]
    return [(a, b) for (a, ra), (b, rb) in itertools.combinations(boxes, 2) if ra.intersects(rb)]


@pytest.mark.parametrize("splits", [False, True], ids=["normal", "splits"])
@pytest.mark.parametrize("path", EXAMPLE_NETS, ids=lambda p: p.stem)
def test_no_two_boxes_overlap(qapp, path, splits):
    scene = make_scene(read_net(path), splits=splits)
    assert len(scene.nodes) > 2
    assert _overlaps(scene) == []


def test_no_overlap_and_flow_at_resnet152_scale(qapp):
    scene = make_scene(resnet152())
    assert len(scene.nodes) > 200 and _overlaps(scene) == []
    for wire in scene.wires:  # bottom-to-top: every wire climbs (scene y grows downwards)
        assert wire.src.scenePos().y() > wire.dst.scenePos().y() + 20


def test_direction_puts_the_data_at_the_bottom_or_the_top(qapp):
    up = make_scene(net_of(FORK))
    down = make_scene(net_of(FORK))
    down.downward = True
    down.rebuild()
    assert up.nodes["input"].y() > up.nodes["sum"].y()
    assert down.nodes["input"].y() < down.nodes["sum"].y()


def test_inception_branches_do_not_cross(qapp):
    from graph_view_support import EXAMPLES

    scene = make_scene(read_net(EXAMPLES / "inception.prototxt"))
    ranks = scene._layout.ranks
    pairs = [(w.edge.src, w.edge.dst) for w in scene.wires if ranks[w.edge.dst] - ranks[w.edge.src] == 1]
    xs = {key: item.x() for key, item in scene.nodes.items()}
    crossing = sum(
        1
        for (a, b), (c, d) in itertools.combinations(pairs, 2)
        if ranks[a] == ranks[c] and a != c and b != d and (xs[a] - xs[c]) * (xs[b] - xs[d]) < 0
    )
    assert crossing == 0


def test_crossing_reduction_untangles_a_twisted_order():
    # Two chains whose given order crosses every edge: the sweeps must find the straight order.
    nodes = ["a1", "b1", "b2", "a2", "a3", "b3"]
    edges = [LayoutEdge(*e) for e in [("a1", "a2"), ("a2", "a3"), ("b1", "b2"), ("b2", "b3")]]
    layout = layered(nodes, {n: (100, 40) for n in nodes}, edges)
    x = {n: p[0] for n, p in layout.positions.items()}
    assert (x["a1"] < x["b1"]) == (x["a2"] < x["b2"]) == (x["a3"] < x["b3"])
    assert abs(x["a1"] - x["a3"]) < 1 and abs(x["b1"] - x["b3"]) < 1  # chains run straight
    assert _crossings([(0, 1), (1, 0)]) == 1 and _crossings([(0, 0), (0, 1), (1, 1)]) == 0


def test_cycles_still_lay_out():
    edges = [LayoutEdge("a", "b"), LayoutEdge("b", "c"), LayoutEdge("c", "a")]
    layout = layered(["a", "b", "c"], {n: (80, 30) for n in "abc"}, edges)
    assert sorted(layout.ranks.values()) == [0, 1, 2] and len(layout.routes) == 3


def test_phase_layouts_differ(qapp):
    from graph_view_support import EXAMPLES

    net = read_net(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    test = make_scene(net, phase=caffe_pb2.TEST)
    assert "accuracy" in test.nodes and _overlaps(test) == []
