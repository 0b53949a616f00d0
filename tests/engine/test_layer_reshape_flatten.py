"""Flatten and Reshape: Caffe's shape rules, storage shared with the bottom, gradients, CHECKs."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format

from engine.errors import LayerSetupError
from engine.net import Net
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob
from proto import caffe_pb2

# --- Flatten ---------------------------------------------------------------------------------


def flatten(xp, params: str = ""):
    return make_layer(f'name: "flat" type: "Flatten" bottom: "x" top: "y" flatten_param {{ {params} }}', xp)


@pytest.mark.parametrize(
    ("params", "shape"),
    [
        ("", (2, 3 * 6 * 5)),
        ("axis: 2", (2, 3, 6 * 5)),
        ("end_axis: -2", (2, 3 * 6, 5)),
        ("axis: 0 end_axis: -2", (2 * 3 * 6, 5)),
        ("axis: -1", (2, 3, 6, 5)),
        ("axis: 0", (2 * 3 * 6 * 5,)),
        # end_axis = axis - 1: Caffe's count(2, 2) is the empty product, a new unit axis at 2
        ("axis: 2 end_axis: 1", (2, 3, 1, 6, 5)),
    ],
)
def test_flatten_shapes(xp, params, shape):
    top = blobs(1, xp)
    flatten(xp, params).setup([random_blob((2, 3, 6, 5), xp)], top)
    assert top[0].shape == shape


def test_flatten_values_follow_row_major_order(xp):
    bottom, top = random_blob((2, 3, 6, 5), xp), blobs(1, xp)
    layer = flatten(xp)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    x, y = host(bottom.data), host(top[0].data)
    for n in range(2):
        for c in range(3 * 6 * 5):
            assert y[n, c] == x[n, c // 30, (c // 5) % 6, c % 5]


def test_flatten_shares_data_and_diff_with_the_bottom(xp):
    bottom, top = random_blob((2, 3, 2), xp), blobs(1, xp)
    layer = flatten(xp)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    bottom.data[...] = xp.asarray(np.arange(12.0).reshape(2, 3, 2))
    np.testing.assert_array_equal(host(top[0].data), np.arange(12.0).reshape(2, 6))
    top[0].diff[...] = xp.asarray(np.arange(12.0).reshape(2, 6) * 2)
    layer.backward(top, [True], [bottom])
    np.testing.assert_array_equal(host(bottom.diff), np.arange(12.0).reshape(2, 3, 2) * 2)


def test_flatten_gradient(xp):
    GradientChecker().check(flatten(xp, "axis: 1 end_axis: 2"), [random_blob((2, 3, 2, 2), xp)], blobs(1, xp))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("axis: 2 end_axis: 0", "end_axis 0 comes before axis 2"),
        ("axis: 4", "out of range"),
        ("end_axis: -5", "range"),
    ],
)
def test_flatten_rejects_bad_axes(xp, params, message):
    with pytest.raises(LayerSetupError, match=rf"'flat' \(Flatten\).*{message}"):
        flatten(xp, params).setup([random_blob((2, 3, 4, 5), xp)], blobs(1, xp))


def test_flatten_refuses_in_place(xp):
    bottom = random_blob((2, 3), xp)
    with pytest.raises(LayerSetupError, match="in-place"):
        flatten(xp).setup([bottom], [bottom])


# --- Reshape ---------------------------------------------------------------------------------


def reshape(xp, dims, extra: str = ""):
    shape = " ".join(f"dim: {d}" for d in dims)
    text = f'name: "rs" type: "Reshape" bottom: "x" top: "y" reshape_param {{ shape {{ {shape} }} {extra} }}'
    return make_layer(text, xp)


@pytest.mark.parametrize(
    ("dims", "extra", "shape"),
    [
        ([0, -1, 1, 1], "", (2, 3 * 6 * 5, 1, 1)),  # Caffe's TestFlattenOutputSizes
        ([0, 0, 0, 0], "", (2, 3, 6, 5)),  # TestCopyDimensions
        ([0, 3, 10, -1], "", (2, 3, 10, 3)),  # TestInferenceOfUnspecified
        ([3, 10, -1], "axis: 1", (2, 3, 10, 3)),  # ... WithStartAxis
        ([1, 1, 1], "axis: 0 num_axes: 0", (1, 1, 1, 2, 3, 6, 5)),  # TestInsertSingletonAxesStart
        ([1, 1, 1], "axis: 2 num_axes: 0", (2, 3, 1, 1, 1, 6, 5)),  # ... Middle
        ([1, 1, 1], "axis: -1 num_axes: 0", (2, 3, 6, 5, 1, 1, 1)),  # ... End
        ([-1], "axis: 1 num_axes: 2", (2, 3 * 6, 5)),  # TestFlattenMiddle
        ([6, 2, 3, 5], "", (6, 2, 3, 5)),
        ([-1], "axis: -3", (2, 3, 30)),  # a negative axis counts from the end (-1: after the last)
        ([0, -1], "axis: -3", (2, 3, 6, 5)),  # 0 copies the bottom dim at axis + i
        ([], "axis: 1 num_axes: 0", (2, 3, 6, 5)),
    ],
)
def test_reshape_shapes(xp, dims, extra, shape):
    top = blobs(1, xp)
    reshape(xp, dims, extra).setup([random_blob((2, 3, 6, 5), xp)], top)
    assert top[0].shape == shape


def test_reshape_values_and_shared_storage(xp):
    bottom, top = random_blob((2, 3, 6, 5), xp), blobs(1, xp)
    layer = reshape(xp, [6, 2, 3, 5])
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    np.testing.assert_array_equal(host(top[0].data).ravel(), host(bottom.data).ravel())
    bottom.data[...] = 1.5
    np.testing.assert_array_equal(host(top[0].data), np.full((6, 2, 3, 5), 1.5))
    top[0].diff[...] = xp.asarray(np.arange(180.0).reshape(6, 2, 3, 5))
    layer.backward(top, [True], [bottom])
    np.testing.assert_array_equal(host(bottom.diff).ravel(), np.arange(180.0))


def test_reshape_follows_a_reshaped_bottom(xp):
    """Caffe's TestForwardAfterReshape: the bottom takes a new shape and new values."""
    bottom, top = random_blob((2, 3, 6, 5), xp), blobs(1, xp)
    layer = reshape(xp, [6, 2, 3, 5])
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    bottom.reshape((180,))
    bottom.data[...] = xp.asarray(np.random.default_rng(5).normal(size=180))
    layer.reshape([bottom], top)
    layer.forward([bottom], top)
    np.testing.assert_array_equal(host(top[0].data).ravel(), host(bottom.data))


def test_reshape_gradient(xp):
    GradientChecker().check(reshape(xp, [0, -1]), [random_blob((2, 3, 2), xp)], blobs(1, xp))


@pytest.mark.parametrize(
    ("dims", "extra", "message"),
    [
        ([-1, -1], "", "several -1"),
        ([7, -1], "", r"bottom count \(180\) must be divisible.*\(7\)"),
        ([2, 3], "", "output count must match input count"),
        ([0, 0, 0, 0, 0], "", "has a 0 at index 4 but no bottom axis"),
        ([-2, 90], "", "dims >= 0"),
        ([1], "axis: 5", "axis 5 out of range"),
        ([1], "axis: -6", "axis -6 out of range"),
        ([1], "axis: 2 num_axes: 3", "out of range"),
        ([1], "num_axes: -2", "num_axes must be >= 0"),
    ],
)
def test_reshape_rejects_bad_shapes(xp, dims, extra, message):
    with pytest.raises(LayerSetupError, match=rf"'rs' \(Reshape\).*{message}"):
        reshape(xp, dims, extra).setup([random_blob((2, 3, 6, 5), xp)], blobs(1, xp))


def test_reshape_refuses_in_place(xp):
    bottom = random_blob((2, 3), xp)
    with pytest.raises(LayerSetupError, match="in-place"):
        reshape(xp, [-1]).setup([bottom], [bottom])


# --- In a net --------------------------------------------------------------------------------

NET = """
name: "shapes"
layer { name: "input" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 dim: 4 } } }
layer { name: "flat" type: "Flatten" bottom: "data" top: "flat" }
layer { name: "rs" type: "Reshape" bottom: "flat" top: "rs" reshape_param { shape { dim: -1 dim: 2 } } }
"""


def test_user_reshape_of_an_input_flows_through_flatten_and_reshape(xp):
    net = Net(text_format.Parse(NET, caffe_pb2.NetParameter()), phase=caffe_pb2.TEST, xp=xp)
    assert net.blob_by_name("rs").shape == (12, 2)
    data = net.blob_by_name("data")
    data.reshape((5, 2, 2))  # Input's reshape does nothing, so this shape survives net.forward
    data.data[...] = xp.asarray(np.arange(20.0).reshape(5, 2, 2))
    net.forward()
    assert data.shape == (5, 2, 2)
    assert net.blob_by_name("flat").shape == (5, 4)
    np.testing.assert_array_equal(host(net.blob_by_name("rs").data), np.arange(20.0).reshape(10, 2))
