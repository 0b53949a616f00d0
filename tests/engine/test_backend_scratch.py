"""backend.scratch: the scratch arrays layers share on a thread (issue 28, memory). One buffer per
name and thread, the largest asked for; a fill kept only while the same layout writes it; and the
layers that share it (two MAX poolings, two convolutions) still give the reference path's numbers
when they run in turn."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from engine import backend, parallel
from engine.layers import conv_cpu
from engine.testing import blobs, make_layer, random_blob


def test_one_buffer_per_name_holds_the_largest():
    small = backend.scratch("test_one", (4, 5), np.float32)
    large = backend.scratch("test_one", (10, 10), np.float64)
    again = backend.scratch("test_one", (3,), np.float32)
    assert small.shape == (4, 5) and large.shape == (10, 10) and again.dtype == np.float32
    assert np.shares_memory(again, large)  # the smaller request reuses the larger buffer
    other = backend.scratch("test_other", (3,), np.float32)
    assert not np.shares_memory(other, again)


def test_each_thread_has_its_own():
    mine = backend.scratch("test_thread", (100,), np.float32)
    theirs: list[np.ndarray] = []
    worker = threading.Thread(
        target=lambda: theirs.append(backend.scratch("test_thread", (100,), np.float32))
    )
    worker.start()
    worker.join()
    assert not np.shares_memory(mine, theirs[0])


def test_a_fill_is_made_again_for_another_layout():
    first = backend.scratch("test_fill", (2, 3), np.float64, -np.inf, "a")
    assert np.all(first == -np.inf)
    first[0] = 7  # where layout "a" writes
    assert np.array_equal(backend.scratch("test_fill", (2, 3), np.float64, -np.inf, "a"), first)
    first[1] = 9  # another layout writes other places
    again = backend.scratch("test_fill", (2, 3), np.float64, -np.inf, "b")
    assert np.all(again == -np.inf)
    plain = backend.scratch("test_fill", (2, 3), np.float64)
    plain[...] = 1  # a caller without a fill scribbles anywhere: the next fill is made again
    assert np.all(backend.scratch("test_fill", (2, 3), np.float64, -np.inf, "b") == -np.inf)


def max_pool(text: str, values: np.ndarray, fast: bool) -> list[np.ndarray]:
    layer: Any = make_layer(f'name: "p" type: "Pooling" pooling_param {{ pool: MAX {text} }}')
    bottom, top = [random_blob(values.shape)], blobs(2)
    bottom[0].data[...] = values
    layer.setup(bottom, top)
    if not fast:
        layer.max_path = lambda x: None  # the reference (patch) path
    layer.forward(bottom, top)
    return [top[0].data.copy(), top[1].data.copy()]


def test_two_max_poolings_in_turn_keep_their_padding(monkeypatch):
    """A padded 4x4 and an unpadded 6x6 pooling have phase planes of one shape: the unpadded one
    writes where the padded one's -inf padding is, so the padded one, next, must fill it again
    (its values all negative: a stale positive would win its border windows)."""
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(1))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    rng = np.random.default_rng(0)
    padded = ("kernel_size: 2 stride: 2 pad: 1", -1 - rng.random((2, 3, 4, 4)))
    unpadded = ("kernel_size: 2 stride: 2", 1 + rng.random((2, 3, 6, 6)))
    for text, values in (padded, unpadded, padded):
        fast, reference = max_pool(text, values, True), max_pool(text, values, False)
        for a, b in zip(fast, reference):
            np.testing.assert_array_equal(a, b)  # the same maxima chosen: equal, not close


def test_two_convolutions_in_turn_give_the_reference(monkeypatch):
    """Two convolutions of other shapes share the column scratch; each, run after the other,
    still gives the plain im2col path's top and gradients."""
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(2))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    rng = np.random.default_rng(1)
    convs = [
        ("num_output: 4 kernel_size: 3 pad: 1", (3, 2, 9, 9)),
        ("num_output: 6 kernel_size: 5 stride: 2", (2, 3, 13, 11)),
    ]

    def run(text: str, shape: tuple, fast: bool) -> list[np.ndarray]:
        layer: Any = make_layer(f'name: "c" type: "Convolution" convolution_param {{ {text} }}')
        bottom, top = [random_blob(shape)], blobs(1)
        bottom[0].data[...] = np.random.default_rng(2).standard_normal(shape)
        layer.setup(bottom, top)
        for blob in layer.blobs:  # the same weights for both paths
            blob.data[...] = rng.standard_normal(blob.shape)
        assert layer.cpu is not None
        if not fast:
            layer.cpu = None  # the reference path
        layer.forward(bottom, top)
        top[0].diff[...] = np.random.default_rng(3).standard_normal(top[0].shape)
        layer.backward(top, [True], bottom)
        return [top[0].data.copy(), bottom[0].diff.copy(), layer.blobs[0].diff.copy()]

    for text, shape in (*convs, *convs):
        state = rng.bit_generator.state
        reference = run(text, shape, False)
        rng.bit_generator.state = state
        fast = run(text, shape, True)
        for a, b in zip(fast, reference):
            # float64, sums in another order (blocks, threads): agree to rounding of the sums
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_a_padded_convolution_after_another_zeroes_its_wider_border(monkeypatch):
    """A 9x9 input padded by 1 and a 7x7 one padded by 2 make padded copies of one shape (11x11):
    the second, run right after the first, must zero its wider border again (the first one's
    pixels are there)."""
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(2))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())

    def forward(pad: int, size: int, fast: bool) -> np.ndarray:
        text = f"num_output: 4 kernel_size: 3 pad: {pad}"
        layer: Any = make_layer(f'name: "c" type: "Convolution" convolution_param {{ {text} }}')
        bottom, top = [random_blob((3, 2, size, size), seed=2)], blobs(1)
        layer.setup(bottom, top)
        for blob in layer.blobs:
            blob.data[...] = 1
        if not fast:
            layer.cpu = None  # the reference path
        layer.forward(bottom, top)
        return top[0].data.copy()

    for layout in ("image-major", "batch-last"):
        monkeypatch.setattr(conv_cpu, "BATCH_LAST_WIDTH", 0 if layout == "image-major" else 1 << 20)
        forward(1, 9, True)
        # float64, the same sums in another order: agree to their rounding
        np.testing.assert_allclose(forward(2, 7, True), forward(2, 7, False), rtol=1e-10, atol=1e-12)
