"""The compiled MAX pooling (engine.layers.max_pool) gives the reference (patch) path's numbers in
float32 (top and mask to the bit, the gradient up to its order of adds), with every kernel set this
CPU runs, one thread or several, on windows that overlap, tile, leave gaps, reach into padding or
past the image, rows wide enough for whole vectors of windows, ties (the first maximum in raster
order), NaN and -inf; the gradient adds in Caffe's order; and arrays the kernels cannot take are
left untouched."""

from __future__ import annotations

import numpy as np
import pytest

from engine import parallel
from engine.layers import max_pool
from engine.layers.pooling import PoolingLayer
from engine.testing import blobs, make_layer, random_blob
from tests.engine.kernel_sets import kernel_set_fixture
from tests.engine.test_layer_pooling_cpu import GEOMETRIES, caffe_loops

pytestmark = pytest.mark.skipif(
    not max_pool.available(), reason="the kernels are not built (no C compiler at install)"
)

# Rows of 40 and 70: whole vectors of full windows (16 lanes) with a tail, at strides 1, 2 and 3.
WIDE = [
    ("kernel_size: 3 stride: 1", (2, 3, 5, 40)),
    ("kernel_size: 3 stride: 2 pad: 1", (1, 4, 9, 70)),
    ("kernel_h: 2 kernel_w: 5 stride_h: 2 stride_w: 3 pad_h: 0 pad_w: 2", (2, 2, 6, 41)),
    ("kernel_size: 2 stride: 2", (1, 3, 4, 64)),
    # windows wider than the image, clipped on both sides
    ("kernel_size: 3 stride: 1 pad: 1", (2, 2, 1, 2)),
    ("kernel_size: 4 stride: 2 pad: 2", (1, 2, 3, 3)),
]


kernel_set = kernel_set_fixture(max_pool)


@pytest.fixture
def every_plane_a_slice(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_SLICE", 1)


def passes(text: str, values: np.ndarray, path: str | None) -> list[np.ndarray]:
    layer = make_layer(f'name: "p" type: "Pooling" pooling_param {{ pool: MAX {text} }}', dtype=np.float32)
    bottom, top = [random_blob(values.shape, dtype=np.float32)], blobs(2, dtype=np.float32)
    bottom[0].data[...] = values
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    assert layer.fast == path
    top[0].diff[...] = np.random.default_rng(3).standard_normal(top[0].shape)
    bottom[0].diff[...] = 5  # overwritten, not added to
    layer.backward(top, [True], bottom)
    return [top[0].data.copy(), top[1].data.copy(), bottom[0].diff.copy()]


@pytest.mark.parametrize("text, shape", GEOMETRIES + WIDE)
def test_compiled_max_equals_reference(monkeypatch, kernel_set, threads, every_plane_a_slice, text, shape):
    rng = np.random.default_rng(0)
    values = rng.integers(-2, 3, size=shape).astype(np.float32)  # many ties
    values[0, 0, 0, :2] = np.nan
    values[-1, -1, :2, :2] = -np.inf
    values[0, -1, -1, :] = np.nan  # a whole row: windows of it choose nothing from it
    fast = passes(text, values, "compiled")
    with monkeypatch.context() as m:
        m.setattr(PoolingLayer, "max_path", lambda self, x: None)
        reference = passes(text, values, None)
    for what, a, b in zip(("top", "mask"), fast, reference):
        np.testing.assert_array_equal(a, b, err_msg=what)
    # the same pixels get gradient; where windows overlap, the reference adds their shares in another
    # order (the kernels add in Caffe's: test_compiled_max_adds_in_caffes_order)
    np.testing.assert_array_equal(fast[2] != 0, reference[2] != 0)
    np.testing.assert_allclose(fast[2], reference[2], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kernel, stride, pad, width", [(3, 2, 1, 37), (2, 1, 0, 40), (3, 3, 0, 9)])
def test_compiled_max_adds_in_caffes_order(kernel_set, kernel, stride, pad, width):
    """Overlapping windows: each pixel sums its windows' gradients in the outputs' raster order, as
    Caffe's loop, to the bit (values of 1e3 and distinct maxima: the order shows)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 2, 7, width)).astype(np.float32)
    text = f"kernel_size: {kernel} stride: {stride} pad: {pad}"
    layer = make_layer(f'name: "p" type: "Pooling" pooling_param {{ pool: MAX {text} }}', dtype=np.float32)
    bottom, top = [random_blob(x.shape, dtype=np.float32)], blobs(1, dtype=np.float32)
    bottom[0].data[...] = x
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    assert layer.fast == "compiled"
    dy = rng.standard_normal(top[0].shape).astype(np.float32) * 1e3
    top[0].diff[...] = dy
    layer.backward(top, [True], bottom)
    want = caffe_loops("MAX", x, dy, kernel, stride, pad)
    np.testing.assert_array_equal(top[0].data, want[0])
    np.testing.assert_array_equal(bottom[0].diff, want[1])


def test_arrays_the_kernels_cannot_take_are_left_untouched():
    g = max_pool.geometry((4, 6), (2, 3), (2, 2), (2, 2), (0, 0))
    x = np.ones((2, 3, 4, 6), np.float32)
    y, index = np.zeros((2, 3, 2, 3), np.float32), np.zeros((2, 3, 2, 3), np.int32)
    refused = [
        (x.astype(np.float64), y, index),  # float64
        (np.ones((2, 3, 4, 12), np.float32)[..., ::2], y, index),  # not contiguous
        (np.ones((2, 3, 4, 7), np.float32), y, index),  # another input size
        (x, np.zeros((2, 3, 2, 2), np.float32), index),  # another output size
        (x, y, index.astype(np.int64)),  # another index type
        (x, y[:1], index[:1]),  # another batch
    ]
    for a, b, i in refused:
        assert not max_pool.forward(a, b, i, g)
    assert not y.any() and not index.any()
    dx = np.full(x.shape, 5, np.float32)
    assert not max_pool.backward(y, index, dx[:, :, :, :5].copy(), g)
    assert not max_pool.backward(y, index.astype(np.int64), dx, g)
    assert (dx == 5).all()


def test_float64_keeps_the_numpy_path():
    layer = make_layer('name: "p" type: "Pooling" pooling_param { pool: MAX kernel_size: 2 stride: 2 }')
    bottom, top = [random_blob((1, 2, 4, 4))], blobs(1)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    assert layer.fast == "cpu"
