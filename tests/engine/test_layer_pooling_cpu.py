"""The CPU's MAX pooling (engine.layers.pooling_cpu) gives the reference (patch) path's numbers:
top, mask and gradient, on overlapping, tiling and gapped windows, padding, both round modes, ties
(first maximum in raster order), NaN and -inf, with and without threads."""

from __future__ import annotations

import numpy as np
import pytest

from engine import parallel
from engine.layers import pooling_cpu
from engine.layers.pooling import PoolingLayer
from engine.testing import blobs, make_layer, random_blob

GEOMETRIES = [
    ("kernel_size: 3 stride: 2", (2, 3, 9, 8)),  # overlapping, CEIL: a last window past the image
    ("kernel_size: 3 stride: 2 round_mode: FLOOR", (2, 3, 9, 8)),  # pixels no window covers
    ("kernel_size: 2 stride: 2", (2, 2, 6, 7)),  # tiling
    ("kernel_size: 3 stride: 2 pad: 1", (1, 2, 7, 7)),
    ("kernel_h: 3 kernel_w: 2 stride_h: 1 stride_w: 3 pad_h: 1 pad_w: 1", (2, 2, 5, 8)),
    ("kernel_size: 2 stride: 3", (2, 2, 7, 7)),  # gaps between windows
    ("global_pooling: true", (2, 3, 4, 5)),
    ("kernel_size: 12", (1, 2, 12, 12)),  # 144 offsets: more than an int8 choice holds
    ("global_pooling: true", (1, 2, 16, 16)),
]


def passes(text: str, shape: tuple, values: np.ndarray, fast: bool) -> list[np.ndarray]:
    layer = make_layer(f'name: "p" type: "Pooling" pooling_param {{ pool: MAX {text} }}')
    bottom, top = [random_blob(shape)], blobs(2)
    bottom[0].data[...] = values
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    assert layer.fast == ("cpu" if fast else None)
    top[0].diff[...] = np.random.default_rng(3).standard_normal(top[0].shape)
    bottom[0].diff[...] = 5  # overwritten, not added to
    layer.backward(top, [True], bottom)
    return [top[0].data.copy(), top[1].data.copy(), bottom[0].diff.copy()]


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("text, shape", GEOMETRIES)
def test_cpu_max_equals_reference(monkeypatch, threads, text, shape):
    rng = np.random.default_rng(0)
    values = rng.integers(-2, 3, size=shape).astype(float)  # many ties
    values[0, 0, 0, :2] = np.nan
    values[-1, -1, :2, :2] = -np.inf
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(threads))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    monkeypatch.setattr(parallel, "MIN_SLICE", 1)  # every image a slice
    fast = passes(text, shape, values, True)
    with monkeypatch.context() as m:
        m.setattr(PoolingLayer, "max_path", lambda self, x: None)
        reference = passes(text, shape, values, False)
    for what, a, b in zip(("top", "mask"), fast, reference):
        np.testing.assert_array_equal(a, b, err_msg=what)
    # the same pixels get gradient; where windows overlap, their shares are added in another order
    np.testing.assert_array_equal(fast[2] != 0, reference[2] != 0)
    np.testing.assert_allclose(fast[2], reference[2], rtol=1e-12, atol=1e-15)


def test_cpu_max_first_maximum_in_raster_order():
    """A window with its maximum twice: the first in raster order (row first) takes the gradient,
    even where a later row's copy is further left."""
    layer = make_layer('name: "p" type: "Pooling" pooling_param { pool: MAX kernel_size: 3 stride: 3 }')
    x = np.zeros((1, 1, 3, 3))
    x[0, 0, 1, 2] = x[0, 0, 2, 0] = 7
    bottom, top = [random_blob(x.shape)], blobs(2)
    bottom[0].data[...] = x
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    assert layer.fast == "cpu" and top[1].data.item() == 1 * 3 + 2
    top[0].diff[...] = 1
    layer.backward(top, [True], bottom)
    want = np.zeros_like(x)
    want[0, 0, 1, 2] = 1
    np.testing.assert_array_equal(bottom[0].diff, want)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("text, shape", GEOMETRIES)
def test_cpu_ave_equals_reference(monkeypatch, threads, text, shape):
    """AVE's sums over the phase planes give the patch path's numbers, up to the order of the adds;
    Caffe's divisor, windows past the image (NaN of 0 / 0) included."""
    values = np.random.default_rng(0).standard_normal(shape)
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(threads))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    monkeypatch.setattr(parallel, "MIN_SLICE", 1)

    def run(on_cpu: bool) -> list[np.ndarray]:
        layer = make_layer(f'name: "p" type: "Pooling" pooling_param {{ pool: AVE {text} }}')
        bottom, top = [random_blob(shape)], blobs(1)
        bottom[0].data[...] = values
        layer.setup(bottom, top)
        if not on_cpu:
            layer.xp = FakeModule()  # not numpy: the patch path (its arrays stay numpy's)
        layer.forward(bottom, top)
        top[0].diff[...] = np.random.default_rng(3).standard_normal(top[0].shape)
        bottom[0].diff[...] = 5
        layer.backward(top, [True], bottom)
        return [top[0].data.copy(), bottom[0].diff.copy()]

    for a, b in zip(run(True), run(False)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


class FakeModule:
    """numpy under another name: a layer whose ``xp`` is not numpy itself takes its general path."""

    def __getattr__(self, name):
        return getattr(np, name)


def caffe_loops(method: str, x: np.ndarray, dy: np.ndarray, k: int, s: int, p: int) -> list[np.ndarray]:
    """Caffe's CPU pooling loops, value by value in float32: top, then bottom diff (outputs in
    raster order, each adding into its window's pixels)."""
    n, c, h, w = x.shape
    ph, pw = dy.shape[2:]
    top, diff = np.zeros(dy.shape, np.float32), np.zeros(x.shape, np.float32)
    for i in np.ndindex(n, c):
        for oh in range(ph):
            for ow in range(pw):
                h0, w0 = oh * s - p, ow * s - p
                h1, w1 = min(h0 + k, h + p), min(w0 + k, w + p)
                size = (h1 - h0) * (w1 - w0)
                rows, cols = range(max(h0, 0), min(h1, h)), range(max(w0, 0), min(w1, w))
                if method == "MAX":
                    best, at = np.float32(np.finfo(np.float32).min), None
                    for r in rows:
                        for q in cols:
                            if x[(*i, r, q)] > best:
                                best, at = x[(*i, r, q)], (r, q)
                    top[(*i, oh, ow)] = best
                    diff[(*i, *at)] += dy[(*i, oh, ow)]
                else:
                    total = np.float32(0)
                    for r in rows:
                        for q in cols:
                            total += x[(*i, r, q)]
                    top[(*i, oh, ow)] = total / np.float32(size)
                    share = dy[(*i, oh, ow)] / np.float32(size)
                    for r in rows:
                        for q in cols:
                            diff[(*i, r, q)] += share
    return [top, diff]


@pytest.mark.parametrize("method", ["MAX", "AVE"])
def test_cpu_pooling_adds_in_caffes_order(method):
    """float32, overlapping padded windows: top and bottom diff equal Caffe's loops to the bit (each
    pixel sums its windows' shares in the outputs' raster order; AVE sums a window in raster order)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 2, 7, 8)).astype(np.float32)
    layer = make_layer(
        f'name: "p" type: "Pooling" pooling_param {{ pool: {method} kernel_size: 3 stride: 2 pad: 1 }}',
        dtype=np.float32,
    )
    assert_caffes_loops(layer, x, rng, method, 3, 2, 1)


def assert_caffes_loops(layer, x, rng, method: str, kernel: int, stride: int, pad: int) -> None:
    """Forward and backward of ``layer`` on x (the bottom diff primed with 5: it is overwritten)
    equal Caffe's loops to the bit."""
    bottom, top = [random_blob(x.shape, dtype=np.float32)], blobs(1, dtype=np.float32)
    bottom[0].data[...] = x
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    dy = rng.standard_normal(top[0].shape).astype(np.float32) * 1e3
    top[0].diff[...] = dy
    bottom[0].diff[...] = 5
    layer.backward(top, [True], bottom)
    want = caffe_loops(method, x, dy, kernel, stride, pad)
    np.testing.assert_array_equal(top[0].data, want[0])
    np.testing.assert_array_equal(bottom[0].diff, want[1])


@pytest.mark.parametrize("text", ["global_pooling: true", "kernel_size: 7"])
def test_cpu_ave_over_the_whole_image_adds_in_caffes_order(monkeypatch, text):
    """One window per image channel (global pooling, or a kernel the image's size): the CPU's
    shortcut (no phase planes) gives Caffe's loops to the bit, float32, the window summed in
    raster order, and each pixel its window's share."""
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(3))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    monkeypatch.setattr(pooling_cpu.AvePool, "forward", None)  # the phase planes must not run
    monkeypatch.setattr(pooling_cpu.AvePool, "backward", None)
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((3, 5, 7, 7)) * 1e3).astype(np.float32)
    layer = make_layer(f'name: "p" type: "Pooling" pooling_param {{ pool: AVE {text} }}', dtype=np.float32)
    assert_caffes_loops(layer, x, rng, "AVE", 7, 1, 0)
