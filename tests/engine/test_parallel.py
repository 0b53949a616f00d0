"""The CPU thread pool, split GEMMs, span-column col2im and the folded convolution bias."""

from __future__ import annotations

import math

import numpy as np
import pytest
from google.protobuf import text_format

from engine import parallel
from engine.layers import conv_cpu
from engine.layers.im2col import (
    col2im,
    col2im_spans,
    conv_output_shape,
    padded_shape,
    span_length,
    spans_view,
)
from engine.solvers import create_solver
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob
from proto import caffe_pb2


@pytest.fixture
def pool3(monkeypatch):
    """A pool of three threads, whatever this machine's BLAS has."""
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(3))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    return parallel._pool


def test_pool_covers_the_range_once_and_raises_errors(pool3):
    seen = np.zeros(100, int)
    parallel.run(lambda a, b: np.add.at(seen, np.arange(a, b), 1), 100)
    assert np.all(seen == 1)
    parallel.run(lambda a, b: np.add.at(seen, np.arange(a, b), 1), 2)  # fewer items than threads
    assert seen[:2].tolist() == [2, 2] and np.all(seen[2:] == 1)

    def fail(a, b):
        if a > 0:
            raise ValueError("second slice")

    with pytest.raises(ValueError, match="second slice"):
        parallel.run(fail, 30)
    parallel.run(lambda a, b: None, 30)  # still usable after an error


def test_slices_run_with_blas_single_threaded_outside_training(pool3):
    """Outside a training step (`time`, `test`, classify) the pool's slices make their GEMMs with
    BLAS single-threaded, as inside one: each slice starting BLAS's own threads beside the pool's
    took ResNet-18's `time` from 1.1 s to 9 s on 2 busy cores. After the call BLAS has its threads back."""
    libraries = parallel._blas_libraries()
    if not libraries:
        pytest.skip("threadpoolctl cannot size this numpy's BLAS")
    saved = [lib.num_threads for lib in libraries]
    try:
        for lib in libraries:
            lib.set_num_threads(2)
        seen: list[int] = []
        parallel.run(lambda a, b: seen.append(max(lib.num_threads for lib in libraries)), 30)
        assert seen == [1, 1, 1]  # every slice, on each of the three threads
        assert all(lib.num_threads == 2 for lib in libraries)
    finally:
        for lib, count in zip(libraries, saved):
            lib.set_num_threads(count)


@pytest.mark.parametrize("split", ["rows", "cols", "batch"])
def test_split_matmul_is_the_whole_matmul(pool3, monkeypatch, split):
    monkeypatch.setattr(parallel, "_split_gemms", 1)
    monkeypatch.setattr(parallel, "MIN_SPLIT_GEMM", 1)
    rng = np.random.default_rng(0)
    a = rng.random((6, 40, 300), dtype=np.float32)
    b = rng.random((300, 250), dtype=np.float32)
    out = np.empty((6, 40, 250), np.float32)
    parallel.matmul(a, b, out, split)
    whole = np.empty_like(out)
    np.matmul(a, b, out=whole)  # the same GEMMs, one call each: sums over all of K either way
    # BLAS picks its blocking (and so its float32 summation order) by the shape it is given, so a slice's
    # sums may round differently from the whole's: equal to float32's accuracy over K=300 terms.
    np.testing.assert_allclose(out, whole, rtol=1e-5)


def solver(pool):
    parallel._pool = pool
    param = text_format.Parse(
        'type: "SGD" base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed" random_seed: 1',
        caffe_pb2.SolverParameter(),
    )
    net = """
    layer { name: "data" type: "Input" top: "data" top: "label"
            input_param { shape { dim: 16 dim: 2 dim: 18 dim: 18 } shape { dim: 16 } } }
    layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
            convolution_param { num_output: 6 kernel_size: 3 weight_filler { type: "xavier" } } }
    layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
            pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
            convolution_param { num_output: 8 kernel_size: 3 weight_filler { type: "xavier" } } }
    layer { name: "ip" type: "InnerProduct" bottom: "conv2" top: "ip"
            inner_product_param { num_output: 300 weight_filler { type: "xavier" } } }
    layer { name: "relu" type: "ReLU" bottom: "ip" top: "ip" }
    layer { name: "out" type: "InnerProduct" bottom: "ip" top: "out"
            inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "out" bottom: "label" top: "loss" }
    """
    param.net_param.CopyFrom(text_format.Parse(net, caffe_pb2.NetParameter()))
    s = create_solver(param, log_fn=lambda line: None)
    rng = np.random.default_rng(4)
    s.net.blob_by_name("data").data[...] = rng.standard_normal((16, 2, 18, 18))
    s.net.blob_by_name("label").data[...] = rng.integers(0, 10, 16)
    s.step(3)
    return [host(p.data) for p in s.net.learnable_params]


def test_training_with_threads_gives_single_thread_numbers(monkeypatch):
    """Slices are element-wise and split GEMMs sum over the whole inner dimension: three threads,
    splitting everything (conv1's per-image columns, conv2's batch-inner ones), give a single
    thread's numbers (BLAS single-threaded in both; up to the rounding of BLAS's kernels for the
    smaller parts)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    for threshold in ("MIN_SPLIT_GEMM", "MIN_SPLIT_TASKS", "MIN_SLICE"):  # split even this small net
        monkeypatch.setattr(parallel, threshold, 1)
    monkeypatch.setattr(conv_cpu, "BLOCK_BYTES", 1)  # a block per output row: many blocks, every thread busy
    with threadpoolctl.threadpool_limits(1):
        one = solver(parallel.Pool(1))
    three = solver(parallel.Pool(3))
    monkeypatch.setattr(parallel, "_pool", None)
    for a, b in zip(one, three):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "spatial, kernel, pad, dilation",
    [
        ((7,), (3,), (1,), (1,)),
        ((6, 5), (3, 2), (1, 0), (1, 2)),
        ((5, 4, 4), (2, 3, 2), (0, 1, 1), (1, 1, 2)),
    ],
)
def test_span_columns_give_col2im(xp, spatial, kernel, pad, dilation):
    n, c = 3, 4
    ones = (1,) * len(spatial)
    out_shape = conv_output_shape(spatial, kernel, pad, ones, dilation)
    full = padded_shape(spatial, pad)
    rng = np.random.default_rng(1)
    col = rng.standard_normal((c, *kernel, *out_shape, n))
    want = col2im(xp.asarray(col), spatial, kernel, pad, ones, dilation)
    # The GEMM's view of span columns, filled with the same entries; the gaps stay zero.
    length = span_length(out_shape, full, n)
    spans = xp.zeros((c * math.prod(kernel), length))
    view = spans_view(spans, 1, out_shape, full, n)  # (*out[:-1], 1, rows, out[-1] * n)
    rows = col.reshape(1, c * math.prod(kernel), *out_shape[:-1], out_shape[-1] * n)
    view[...] = xp.asarray(
        np.moveaxis(rows, tuple(range(2, 2 + len(out_shape) - 1)), tuple(range(len(out_shape) - 1)))
    )
    got = col2im_spans(
        spans.reshape(c, *kernel, length), spatial, kernel, pad, dilation, xp.empty((n, c, *spatial))
    )
    np.testing.assert_allclose(host(got), host(want), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "fields, shape",
    [
        ({"num_output": 4, "kernel_size": 3, "pad": 1, "group": 2}, (2, 4, 4, 3)),
        ({"num_output": 2, "kernel_size": [2, 2, 3], "pad": [1, 0, 1]}, (2, 2, 3, 3, 3)),
        ({"num_output": 3, "kernel_size": 3, "dilation": 2}, (2, 2, 7)),
    ],
)
def test_stride_one_convolution_gradients(xp, fields, shape):
    """Small outputs take the batch-inner columns, and stride 1 the span-column data gradient."""
    body = " ".join(
        " ".join(f"{k}: {x}" for x in v) if isinstance(v, list) else f"{k}: {v}" for k, v in fields.items()
    )
    layer = make_layer(
        f'name: "c" type: "Convolution" convolution_param {{ {body} '
        'weight_filler { type: "gaussian" std: 0.5 } bias_filler { type: "uniform" min: -1 max: 1 } }',
        xp,
    )
    GradientChecker(stepsize=1e-3, threshold=1e-3).check(
        layer, [random_blob(shape, xp, seed=2)], blobs(1, xp)
    )


def test_folded_bias_learns_alone(xp):
    """With the weight frozen the bias gradient cannot ride in the weight GEMM: it is summed apart."""
    layer = make_layer(
        'name: "c" type: "Convolution" convolution_param { num_output: 3 kernel_size: 2 '
        'weight_filler { type: "gaussian" std: 0.5 } }',
        xp,
    )
    bottom, top = [random_blob((2, 2, 4, 4), xp, seed=3)], blobs(1, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    top[0].diff[...] = xp.asarray(np.random.default_rng(0).standard_normal(top[0].shape))
    layer.param_propagate_down = [False, True]
    layer.backward(top, [False], bottom)
    np.testing.assert_allclose(host(layer.blobs[1].diff), host(top[0].diff).sum(axis=(0, 2, 3)), rtol=1e-5)
    assert np.all(host(layer.blobs[0].diff) == 0)


def test_blocks_cover_each_slice_in_order_within_the_cache(pool3, monkeypatch):
    """run_blocks: every item once, each thread's slice in blocks of at most half the cache's worth,
    in order, the last one shorter; cache_bytes reads a size the system reports."""
    assert parallel.cache_bytes() >= 1 << 10
    monkeypatch.setattr(parallel, "MIN_SLICE", 1)
    monkeypatch.setattr(parallel, "cache_bytes", lambda: 80)  # 40 bytes: blocks of 5 items of 8 bytes
    assert parallel.block_items(8) == 5 and parallel.block_items(1000) == 1
    seen, calls = np.zeros(101, int), []
    lock = __import__("threading").Lock()

    def task(a, b):
        with lock:
            calls.append((a, b))
        seen[a:b] += 1

    parallel.run_blocks(task, 101, np, 1, 8)
    assert np.all(seen == 1)
    assert max(b - a for a, b in calls) == 5 and len(calls) > 101 // 5
    parallel.run_blocks(task, 7, "not numpy", 1, 8)  # another array module: one call
    assert calls[-1] == (0, 7)
