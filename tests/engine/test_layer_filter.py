"""Filter: Caffe's test_filter_layer.cpp cases, an indexing reference, gradients, CHECKs, a net."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format

from engine.errors import LayerSetupError
from engine.net import Net
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob
from proto import caffe_pb2


def filter_layer(xp, tops: int = 2):
    return make_layer('name: "f" type: "Filter"', xp), blobs(tops, xp)


def selector(values, xp, shape=None):
    blob = random_blob(shape or (len(values),), xp)
    blob.data[...] = xp.asarray(np.asarray(values, dtype=np.float64).reshape(blob.shape))
    return blob


def run(xp, values, shapes=((4, 3, 6, 4), (4, 2, 3, 2))):
    data = [random_blob(s, xp, seed=10 + i) for i, s in enumerate(shapes)]
    layer, top = filter_layer(xp, len(shapes))
    bottom = [*data, selector(values, xp)]
    layer.setup(bottom, top)
    layer.reshape(bottom, top)
    layer.forward(bottom, top)
    return layer, bottom, top


def test_setup_gives_every_item_then_reshape_reads_the_selector(xp):
    """As Caffe: the first reshape (in setup) keeps N items; later reshapes keep the selected ones."""
    data = [random_blob((4, 3, 6, 4), xp), random_blob((4, 2, 3, 2), xp)]
    layer, top = filter_layer(xp)
    bottom = [*data, selector([0, 1, 1, 0], xp)]
    layer.setup(bottom, top)
    assert [t.shape for t in top] == [(4, 3, 6, 4), (4, 2, 3, 2)]
    layer.reshape(bottom, top)
    assert [t.shape for t in top] == [(2, 3, 6, 4), (2, 2, 3, 2)]


@pytest.mark.parametrize(
    "values",
    [[0, 1, 1, 0], [1, 0, 0, 1], [1, 1, 1, 1], [-0.5, 0, 2, 0], [0, 0, np.nan, 0]],
    ids=["middle", "ends", "all", "any-nonzero", "nan-is-nonzero"],
)
def test_forward_keeps_the_items_whose_selector_is_nonzero(xp, values):
    _, bottom, top = run(xp, values)
    keep = [i for i, v in enumerate(values) if v != 0]  # C++ truthiness: NaN and negatives count
    for t, b in zip(top, bottom):
        assert t.shape == (len(keep), *b.shape[1:])
        np.testing.assert_array_equal(host(t.data), host(b.data)[keep])


def test_selector_may_carry_singleton_axes(xp):
    data = random_blob((3, 2), xp)
    layer, top = filter_layer(xp, 1)
    bottom = [data, selector([1, 0, 1], xp, shape=(3, 1, 1, 1))]
    layer.setup(bottom, top)
    layer.reshape(bottom, top)
    layer.forward(bottom, top)
    np.testing.assert_array_equal(host(top[0].data), host(data.data)[[0, 2]])


def test_nothing_selected_gives_empty_tops_and_zero_gradient(xp):
    layer, bottom, top = run(xp, [0, 0, 0, 0])
    assert [t.shape for t in top] == [(0, 3, 6, 4), (0, 2, 3, 2)]
    for b in bottom[:2]:
        b.diff[...] = 7
    layer.backward(top, [True, True, False], bottom)
    for b in bottom[:2]:
        assert not np.any(host(b.diff))


def test_backward_copies_selected_items_and_zero_fills_the_rest(xp):
    layer, bottom, top = run(xp, [0, 1, 0, 1])
    for t in top:
        t.diff[...] = xp.asarray(np.random.default_rng(3).normal(size=t.shape))
    bottom[0].diff[...] = 5  # stale values must not survive
    layer.backward(top, [True, False, False], bottom)
    want = np.zeros(bottom[0].shape)
    want[[1, 3]] = host(top[0].diff)
    np.testing.assert_array_equal(host(bottom[0].diff), want)
    assert not np.any(host(bottom[1].diff))  # not asked for: untouched (still zero)


def test_gradient(xp):
    """Caffe's TestGradient: the filtered bottoms only, with the selector fixed."""
    data = [random_blob((4, 3, 2, 2), xp), random_blob((4, 2), xp, seed=5)]
    layer, top = filter_layer(xp)
    bottom = [*data, selector([0, 1, 1, 0], xp)]
    layer.setup(bottom, top)
    GradientChecker().check(layer, bottom, top, check_bottom=[0, 1])


def test_selector_gets_no_gradient(xp):
    layer, bottom, top = run(xp, [1, 0, 1, 1])
    with pytest.raises(LayerSetupError, match="selector"):
        layer.backward(top, [True, True, True], bottom)
    assert [layer.allow_force_backward(i) for i in range(3)] == [True, True, False]


@pytest.mark.parametrize(
    ("shapes", "tops", "message"),
    [
        (((4, 3), (4, 1, 2)), 1, "singleton"),  # selector (4, 1, 2): not all trailing axes are 1
        (((4, 3), (3,)), 1, "first dimension"),  # selector of 3 items for 4
        (((4, 3), (4, 2), (4,)), 1, "one top per filtered bottom"),
    ],
)
def test_caffe_checks(xp, shapes, tops, message):
    layer, top = filter_layer(xp, tops)
    bottom = [random_blob(s, xp) for s in shapes]
    with pytest.raises(LayerSetupError, match=rf"'f' \(Filter\).*{message}"):
        layer.setup(bottom, top)


def test_in_a_net_the_batch_shrinks_to_the_selection(xp):
    text = """
    force_backward: true
    layer { name: "x" type: "Input" top: "x" top: "sel"
            input_param { shape { dim: 5 dim: 3 } shape { dim: 5 } } }
    layer { name: "f" type: "Filter" bottom: "x" bottom: "sel" top: "fx" }
    layer { name: "ip" type: "InnerProduct" bottom: "fx" top: "y"
            inner_product_param { num_output: 2 weight_filler { type: "gaussian" } } }
    layer { name: "loss" type: "Reduction" bottom: "y" top: "loss" loss_weight: 1
            reduction_param { operation: SUMSQ } }
    """
    net = Net(text_format.Parse(text, caffe_pb2.NetParameter()), caffe_pb2.TRAIN, xp=xp, dtype=np.float64)
    x = np.arange(15.0).reshape(5, 3)
    net.blob_by_name("x").data[...] = xp.asarray(x)
    net.blob_by_name("sel").data[...] = xp.asarray([0.0, 1, 0, 0, 1])
    net.forward()
    np.testing.assert_array_equal(host(net.blob_by_name("fx").data), x[[1, 4]])
    assert net.blob_by_name("y").shape == (2, 2)
    net.backward()
    dx = host(net.blob_by_name("x").diff)
    assert not np.any(dx[[0, 2, 3]]) and np.all(dx[[1, 4]] != 0)
    assert not np.any(host(net.blob_by_name("sel").diff))  # force_backward never asks the selector
