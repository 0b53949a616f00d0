"""The fused CUDA kernels (engine.kernels) against the plain cupy path (ENGINE_KERNELS=0) on every
layer that has one: Convolution (im2col / col2im), MAX Pooling, SoftmaxWithLoss and the SGD update.

Both run on the GPU from the same inputs; the kernels follow Caffe's CUDA code and the plain path
cupy's array operations, so sums may run in other orders: values agree to float rounding, masks and
argmax choices exactly. The cases mix padding, strides, dilation, ceil-mode windows past the edge,
ties, ignored labels and every normalization.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import backend, kernels
from engine.kernels import gemm
from engine.testing import blobs, host, make_layer, random_blob
from tests.engine import test_kernels_gemm_plan as gemm_plan

pytestmark = pytest.mark.gpu


@pytest.fixture
def cupy():
    reason = backend.gpu_unavailable_reason()
    if reason:
        pytest.skip(f"GPU: {reason}")
    return backend.array_module("gpu")


def run_layer(cupy, text: str, shapes: list[tuple[int, ...]], fused: bool, monkeypatch, labels=None):
    """Forward and backward of one layer on the GPU; (tops, bottom diffs, param diffs) on the host."""
    monkeypatch.setattr(kernels, "SWITCHED_OFF", not fused)
    layer = make_layer(text, xp=cupy, dtype=np.float32)
    bottom = [random_blob(shape, cupy, np.float32, seed=7 + i) for i, shape in enumerate(shapes)]
    if labels is not None:
        bottom[-1].data[...] = cupy.asarray(np.asarray(labels, np.float32).reshape(bottom[-1].shape))
    top = blobs(2 if 'top: "mask"' in text else 1, cupy, np.float32)
    layer.setup(bottom, top)
    layer.reshape(bottom, top)
    layer.forward(bottom, top)
    for i, blob in enumerate(top[:1]):
        blob.diff[...] = cupy.asarray(
            np.random.default_rng(3 + i).uniform(-1, 1, blob.shape).astype(np.float32)
        )
    layer.backward(top, [True] + [labels is None] * (len(bottom) - 1), bottom)
    return (
        [host(t.data).copy() for t in top],
        [host(b.diff).copy() for b in bottom],
        [host(p.diff).copy() for p in layer.blobs],
    )


def assert_same(fused, plain, rtol=2e-5, atol=2e-6):
    for group_f, group_p in zip(fused, plain):
        assert len(group_f) == len(group_p)
        for f, p in zip(group_f, group_p):
            np.testing.assert_allclose(f, p, rtol=rtol, atol=atol)


CONVOLUTIONS = [
    ("num_output: 4 kernel_size: 3", (2, 3, 9, 9)),
    ("num_output: 5 kernel_size: 5 pad: 2 stride: 2", (3, 2, 11, 10)),
    ("num_output: 4 kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 0 stride_h: 2 stride_w: 1", (2, 3, 8, 7)),
    ("num_output: 6 kernel_size: 3 dilation: 2 pad: 2 group: 2", (2, 4, 9, 9)),
    ("num_output: 3 kernel_size: 1 bias_term: false", (4, 5, 6, 6)),
]


@pytest.mark.parametrize("spec, shape", CONVOLUTIONS, ids=[c[0] for c in CONVOLUTIONS])
def test_convolution_kernels_match_the_plain_path(cupy, monkeypatch, spec, shape):
    text = (
        'name: "c" type: "Convolution" bottom: "x" top: "y" convolution_param { '
        f'{spec} weight_filler {{ type: "gaussian" std: 0.1 }} '
        'bias_filler { type: "constant" value: 0.1 } }'
    )
    from engine import rng

    rng.set_random_seed(5)
    fused = run_layer(cupy, text, [shape], True, monkeypatch)
    rng.set_random_seed(5)
    plain = run_layer(cupy, text, [shape], False, monkeypatch)
    assert_same(fused, plain)


def test_deconvolution_uses_col2im_forward_and_matches(cupy, monkeypatch):
    text = (
        'name: "d" type: "Deconvolution" bottom: "x" top: "y" convolution_param { num_output: 3 '
        'kernel_size: 4 stride: 2 pad: 1 weight_filler { type: "gaussian" std: 0.1 } }'
    )
    from engine import rng

    rng.set_random_seed(5)
    fused = run_layer(cupy, text, [(2, 4, 5, 5)], True, monkeypatch)
    rng.set_random_seed(5)
    plain = run_layer(cupy, text, [(2, 4, 5, 5)], False, monkeypatch)
    assert_same(fused, plain)


POOLS = [
    "kernel_size: 2 stride: 2",
    "kernel_size: 3 stride: 2",  # ceil mode: the last window reaches past the edge
    "kernel_size: 3 stride: 1 pad: 1",
    "kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 1 pad_w: 0",
]


@pytest.mark.parametrize("spec", POOLS)
def test_max_pooling_kernels_match_the_plain_path_mask_included(cupy, monkeypatch, spec):
    text = f'name: "p" type: "Pooling" bottom: "x" top: "y" top: "mask" pooling_param {{ pool: MAX {spec} }}'
    fused = run_layer(cupy, text, [(2, 3, 9, 8)], True, monkeypatch)
    plain = run_layer(cupy, text, [(2, 3, 9, 8)], False, monkeypatch)
    assert_same(fused, plain, rtol=0, atol=0)  # max and routing copy values: exact


def test_max_pooling_ties_pick_the_same_element(cupy, monkeypatch):
    text = 'name: "p" type: "Pooling" bottom: "x" top: "y" top: "mask" '
    text += "pooling_param { pool: MAX kernel_size: 2 }"

    def with_ties(fused: bool):
        monkeypatch.setattr(kernels, "SWITCHED_OFF", not fused)
        layer = make_layer(text, xp=cupy, dtype=np.float32)
        x = blobs(1, cupy, np.float32)[0]
        x.reshape((1, 2, 4, 4))
        x.data[...] = cupy.asarray(np.tile(np.array([1, 1, 0, 2], np.float32), (1, 2, 4, 1)))
        top = blobs(2, cupy, np.float32)
        layer.setup([x], top)
        layer.reshape([x], top)
        layer.forward([x], top)
        return host(top[1].data).copy()

    np.testing.assert_array_equal(with_ties(True), with_ties(False))


LOSSES = [
    "",
    "loss_param { ignore_label: 2 }",
    "loss_param { ignore_label: 2 normalization: FULL }",
    "loss_param { normalization: BATCH_SIZE }",
    "loss_param { normalization: NONE }",
    "softmax_param { axis: 1 } loss_param { ignore_label: 0 normalization: VALID }",
]


@pytest.mark.parametrize("spec", LOSSES)
def test_softmax_loss_kernels_match_the_plain_path(cupy, monkeypatch, spec):
    text = f'name: "l" type: "SoftmaxWithLoss" bottom: "x" bottom: "label" top: "loss" {spec}'
    labels = np.random.default_rng(1).integers(0, 5, (4, 1, 3, 2))
    shapes = [(4, 5, 3, 2), (4, 1, 3, 2)]
    fused = run_layer(cupy, text, shapes, True, monkeypatch, labels=labels)
    plain = run_layer(cupy, text, shapes, False, monkeypatch, labels=labels)
    assert_same(fused[:2], plain[:2])  # the loss and the scores' gradient (labels get none)


def test_sgd_update_kernel_matches_the_plain_path(cupy, monkeypatch):
    from google.protobuf import text_format

    from engine.solvers import create_solver
    from proto import caffe_pb2

    net = """
    layer { name: "data" type: "Input" top: "data" top: "label"
            input_param { shape { dim: 6 dim: 3 dim: 8 dim: 8 } shape { dim: 6 } } }
    layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
            param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
            convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } } }
    layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool"
            pooling_param { pool: MAX kernel_size: 2 } }
    layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip"
            inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
    """

    def train(fused: bool):
        monkeypatch.setattr(kernels, "SWITCHED_OFF", not fused)
        param = text_format.Parse(
            'type: "SGD" base_lr: 0.05 momentum: 0.9 weight_decay: 0.01 lr_policy: "step" gamma: 0.5 '
            "stepsize: 2 iter_size: 2 max_iter: 100 random_seed: 4",
            caffe_pb2.SolverParameter(),
        )
        param.net_param.CopyFrom(text_format.Parse(net, caffe_pb2.NetParameter()))
        solver = create_solver(param, xp=cupy, log_fn=lambda line: None)
        rng = np.random.default_rng(0)
        solver.net.blob_by_name("data").data[...] = cupy.asarray(rng.random((6, 3, 8, 8), dtype=np.float32))
        solver.net.blob_by_name("label").data[...] = cupy.asarray(rng.integers(0, 5, 6).astype(np.float32))
        solver.step(5)
        return solver.smoothed_loss, [host(p.data).copy() for p in solver.net.learnable_params]

    fused_loss, fused_params = train(True)
    plain_loss, plain_params = train(False)
    assert fused_loss == pytest.approx(plain_loss, rel=1e-5)
    for f, p in zip(fused_params, plain_params):
        np.testing.assert_allclose(f, p, rtol=1e-5, atol=1e-6)


def test_kernels_change_nothing_on_the_numpy_path():
    """Every entry point declines numpy arrays, so the CPU keeps its own code (the fixture's numpy
    case of the layer tests covers what that code computes)."""
    x = np.zeros((1, 1, 4, 4), np.float32)
    assert not kernels.enabled(x)
    assert not kernels.im2col_2d(x, np.zeros((1, 1, 2, 2, 3, 3), np.float32), (2, 2), (0, 0), (1, 1), (1, 1))
    assert not kernels.max_pool_forward(
        x, x[..., :2, :2].copy(), np.zeros((1, 1, 2, 2), np.int32), (2, 2), (2, 2), (0, 0)
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", gemm_plan.CASES)
def test_the_engines_cublas_gemm_matches_cupy_matmul(cupy, name, dtype):
    memory = gemm_plan.Memory(4000, xp=cupy, dtype=dtype)
    a, b, out = gemm_plan.case_arrays(name, np.random.default_rng(len(name)), memory)
    assert gemm.matmul(a, b, out)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    np.testing.assert_allclose(host(out), host(cupy.matmul(a, b)), **tol)


def test_the_engines_gemm_can_be_captured_in_a_cuda_graph(cupy):
    """cupy.matmul cannot go into a graph (cupy refuses cuBLAS during capture); the engine's can, and
    the replay computes what the eager call did, bit for bit."""
    a = cupy.asarray(np.random.default_rng(0).standard_normal((64, 800), dtype=np.float32))
    b = cupy.asarray(np.random.default_rng(1).standard_normal((800, 500), dtype=np.float32))
    eager, replayed = cupy.empty((64, 500), np.float32), cupy.empty((64, 500), np.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        assert gemm.matmul(a, b, eager)
        stream.begin_capture()
        gemm.matmul(a, b, replayed)
        graph = stream.end_capture()
    graph.launch(stream)
    stream.synchronize()
    np.testing.assert_array_equal(host(replayed), host(eager))
