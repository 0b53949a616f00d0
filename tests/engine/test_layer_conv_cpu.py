"""The CPU's channels-last convolution (engine.layers.conv_cpu) gives the reference path's numbers:
forward, weight, bias and data gradients, Convolution and Deconvolution, over geometries with
groups, depthwise, dilation, strides, padding, far padding, and blocks of rows or of images.
(The compiled direct kernels, which take float32 first, are off here: test_layer_conv_direct.)"""

from __future__ import annotations

import numpy as np
import pytest

from engine import parallel
from engine.layers import conv_cpu, conv_direct, conv_rows
from engine.testing import blobs, make_layer, random_blob


@pytest.fixture(autouse=True)
def gemm_path(monkeypatch):
    """These tests are of the im2col/GEMM path: without the direct kernels, in float32 too."""
    monkeypatch.setattr(conv_direct, "_lib", None)


GEOMETRIES = [
    # (kind, fields, bottom shape)
    ("Convolution", {"num_output": 6, "kernel_size": 5, "pad": 2}, (3, 3, 9, 8)),
    ("Convolution", {"num_output": 8, "kernel_size": 3, "stride": 2, "pad": 1}, (2, 5, 9, 9)),
    ("Convolution", {"num_output": 8, "kernel_size": 3, "group": 2, "dilation": 2, "pad": 2}, (2, 8, 7, 9)),
    ("Convolution", {"num_output": 12, "kernel_size": 3, "group": 12, "pad": 1}, (2, 12, 6, 5)),  # depthwise
    ("Convolution", {"num_output": 4, "kernel_size": 1, "stride": 2}, (3, 6, 7, 6)),
    (
        "Convolution",
        {"num_output": 4, "kernel_h": 2, "kernel_w": 4, "stride_h": 3, "stride_w": 1},
        (2, 4, 8, 7),
    ),
    ("Convolution", {"num_output": 4, "kernel_size": 3, "stride": 2, "dilation": 2, "pad": 1}, (2, 3, 9, 10)),
    ("Convolution", {"num_output": 3, "kernel_size": 2, "stride": 3, "pad": 2}, (2, 4, 7, 8)),
    # kernel offsets 0, 2, 4 on stride 3: each a different remainder, the last one a window further
    (
        "Convolution",
        {"num_output": 4, "kernel_size": 3, "stride": 3, "dilation": 2, "pad": 1},
        (2, 3, 11, 13),
    ),
    ("Convolution", {"num_output": 3, "kernel_size": 3, "stride": 2}, (2, 4, 4, 4)),  # far padding
    ("Convolution", {"num_output": 5, "kernel_size": 2, "pad": 3}, (2, 4, 3, 3)),  # pad past the extent
    ("Convolution", {"num_output": 6, "kernel_size": 11, "stride": 4}, (2, 3, 27, 27)),
    ("Convolution", {"num_output": 6, "kernel_size": 5}, (3, 4, 12, 12)),  # LeNet's conv2: a scatter
    ("Convolution", {"num_output": 6, "kernel_size": 1}, (3, 4, 5, 7)),  # 1 x 1: no columns made
    ("Convolution", {"num_output": 4, "kernel_size": 1, "dilation": 2, "group": 2}, (2, 8, 6, 3)),
    ("Convolution", {"num_output": 4, "kernel_h": 1, "kernel_w": 1, "pad_h": 1, "pad_w": 0}, (2, 4, 5, 6)),
    ("Convolution", {"num_output": 6, "kernel_size": 1, "pad": 1, "group": 2}, (2, 8, 4, 5)),
    ("Deconvolution", {"num_output": 5, "kernel_size": 1}, (2, 6, 4, 4)),
    ("Deconvolution", {"num_output": 4, "kernel_size": 3, "pad": 1}, (2, 6, 5, 4)),
    ("Deconvolution", {"num_output": 6, "kernel_size": 4, "stride": 2, "pad": 1, "group": 2}, (2, 8, 4, 5)),
]


def conv_text(kind: str, fields: dict) -> str:
    body = " ".join(f"{k}: {v}" for k, v in fields.items())
    fillers = 'weight_filler { type: "gaussian" std: 0.5 } bias_filler { type: "uniform" min: -1 max: 1 }'
    return f'name: "c" type: "{kind}" convolution_param {{ {body} {fillers} }}'


def passes(kind: str, fields: dict, shape: tuple, fast: bool, dtype=np.float64) -> list[np.ndarray]:
    """Forward, then backward with a random top diff: [top, weight diff, bias diff, bottom diff]."""
    layer = make_layer(conv_text(kind, fields), dtype=dtype)
    bottom, top = [random_blob(shape, seed=1, dtype=dtype)], blobs(1, dtype=dtype)
    layer.setup(bottom, top)
    rng = np.random.default_rng(0)
    for blob in layer.blobs:  # the same weights for both paths
        blob.data[...] = rng.standard_normal(blob.shape)
    assert layer.cpu is not None
    if not fast:
        layer.cpu = None  # the reference path
    layer.forward(bottom, top)
    top[0].diff[...] = np.random.default_rng(2).standard_normal(top[0].shape)
    for blob in layer.blobs:
        blob.diff[...] = 0.25  # gradients add to what is there
    layer.backward(top, [True], bottom)
    return [top[0].data.copy(), layer.blobs[0].diff.copy(), layer.blobs[1].diff.copy(), bottom[0].diff.copy()]


@pytest.fixture(params=["one block", "a block per row", "threads"])
def blocking(request, monkeypatch):
    monkeypatch.setattr(conv_cpu, "MIN_GROUP_CHANNELS", 1)  # depthwise too
    if request.param == "a block per row":
        monkeypatch.setattr(conv_cpu, "BLOCK_BYTES", 1)
    if request.param == "threads":
        monkeypatch.setattr(conv_cpu, "BLOCK_BYTES", 1)
        monkeypatch.setattr(parallel, "_pool", parallel.Pool(3))
        monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    return request.param


@pytest.fixture(params=["image-major", "batch-last", "kernel rows"])
def layout(request, monkeypatch):
    """Every geometry through each column layout: im2col's image-major or batch-last (the stride-1
    ones), or kernel rows as shifted views (conv_rows: stride 1 down the rows, any depth)."""
    monkeypatch.setattr(conv_cpu, "BATCH_LAST_WIDTH", 1 << 20 if request.param == "batch-last" else 0)
    monkeypatch.setattr(conv_rows, "MIN_DEPTH", 1 if request.param == "kernel rows" else 1 << 30)
    return request.param


@pytest.mark.parametrize("kind, fields, shape", GEOMETRIES)
def test_cpu_path_equals_reference(blocking, layout, kind, fields, shape):
    fast = passes(kind, fields, shape, fast=True)
    reference = passes(kind, fields, shape, fast=False)
    for what, a, b in zip(("top", "weight diff", "bias diff", "bottom diff"), fast, reference):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("columns", ["im2col", "kernel rows"])
@pytest.mark.parametrize("orientation", ["dY cols^T", "(cols dY^T)^T"])
@pytest.mark.parametrize("kind, fields, shape", GEOMETRIES)
def test_weight_gradient_either_way_round_equals_reference(
    monkeypatch, columns, orientation, kind, fields, shape
):
    """The weight gradient's GEMM, dY cols^T or its transpose, gives the reference's numbers, in
    blocks of a row (and with large blocks: one product, no sum)."""
    monkeypatch.setattr(conv_cpu, "MIN_GROUP_CHANNELS", 1)
    monkeypatch.setattr(conv_rows, "MIN_DEPTH", 1 if columns == "kernel rows" else 1 << 30)
    monkeypatch.setattr(conv_cpu, "BATCH_LAST_WIDTH", 0)
    monkeypatch.setattr(conv_cpu, "DW_TRANSPOSED_POSITIONS", 0 if orientation[0] == "(" else 1 << 30)
    for block_positions in (0, 1 << 20):
        monkeypatch.setattr(conv_cpu, "BLOCK_BYTES", 1)
        monkeypatch.setattr(conv_cpu, "ROW_POSITIONS", block_positions)
        fast = passes(kind, fields, shape, fast=True)
        reference = passes(kind, fields, shape, fast=False)
        for what, a, b in zip(("top", "weight diff", "bias diff", "bottom diff"), fast, reference):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=what)


def test_cpu_path_takes_real_nets_2d_convolutions():
    """It runs where the speed is needed (2-D, numpy, some channels per group), and not elsewhere."""
    assert conv_cpu.applies(np, 2, 3, 1) and conv_cpu.applies(np, 2, 256, 2)
    assert not conv_cpu.applies(np, 2, 32, 32)  # depthwise: the reference path
    assert not conv_cpu.applies(np, 3, 8, 1) and not conv_cpu.applies(np, 1, 8, 1)
    layer = make_layer(conv_text("Convolution", {"num_output": 4, "kernel_size": 3}))
    layer.setup([random_blob((2, 4, 6, 6))], blobs(1))
    assert isinstance(layer.cpu, conv_cpu.CpuConv)


def test_pointwise_columns_are_the_input_itself():
    """A 1 x 1 stride-1 convolution multiplies each image's rows as they are: blocks of one image,
    columns that are a view of the input, products written straight into the top."""
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    geometry = conv_cpu.Geometry((1, 1), (1, 1), (1, 1), (4, 5), 1)
    source = conv_cpu.source_for(x, (0, 0), geometry, 12)
    assert isinstance(source, conv_cpu.ImageMajor) and source.blocks.images == 1
    for block, part in source.units(0, 2, 0):
        cols = source.columns(block, part, np.empty(0, np.float32))
        assert np.shares_memory(cols, x)
        np.testing.assert_array_equal(cols[0], x[block[0]].reshape(3, -1))
        y = np.zeros((2, 6, 4, 5), np.float32)
        assert np.shares_memory(source.target(y, block), y)


def test_cpu_path_picks_the_layout_with_the_longer_runs():
    """Small stride-1 outputs copy their columns batch-last, large or strided ones image-major."""
    x = np.zeros((4, 3, 16, 16), np.float32)
    small = conv_cpu.Geometry((3, 3), (1, 1), (1, 1), (16, 16), 1)
    strided = conv_cpu.Geometry((3, 3), (2, 2), (1, 1), (8, 8), 1)
    large = conv_cpu.Geometry((3, 3), (1, 1), (1, 1), (56, 56), 1)
    assert isinstance(conv_cpu.source_for(x, (1, 1), small, 108), conv_cpu.BatchLast)
    assert isinstance(conv_cpu.source_for(x, (1, 1), strided, 108), conv_cpu.ImageMajor)
    assert isinstance(conv_cpu.source_for(x, (1, 1), large, 108), conv_cpu.ImageMajor)


def test_cpu_path_in_float32_stays_within_rounding():
    """float32: the forward sums each column in the reference's order (c, kh, kw), BLAS's blocking
    aside; the gradients sum in other orders, within float32's rounding over their terms."""
    fields = {"num_output": 16, "kernel_size": 5, "pad": 2}
    fast = passes("Convolution", fields, (4, 8, 12, 12), True, np.float32)
    reference = passes("Convolution", fields, (4, 8, 12, 12), False, np.float32)
    np.testing.assert_allclose(fast[0], reference[0], rtol=1e-6, atol=1e-6 * np.abs(reference[0]).max())
    for a, b in zip(fast[1:], reference[1:]):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4 * np.abs(b).max())


def test_batch_last_groups_give_every_thread_work(monkeypatch):
    """A small batch of small maps (ResNet's 7 x 7 at batch 8) still splits over the threads, and
    the groups cover the batch evenly, each image once."""
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(2))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    for n, width in [(8, 7), (10, 13), (100, 16), (3, 16)]:
        geometry = conv_cpu.Geometry((3, 3), (1, 1), (1, 1), (width, width), 1)
        source = conv_cpu.BatchLast(np.zeros((n, 2, width, width)), (1, 1), geometry, 144)
        assert source.size >= 2 and source.size % 2 == 0
        groups = sorted({block[:2] for block, _ in source.units(0, source.size, 0)})
        assert [a for a, _ in groups] == [0] + [b for _, b in groups[:-1]] and groups[-1][1] == n
        sizes = [b - a for a, b in groups]
        assert max(sizes) - min(sizes) <= 1


def test_a_small_scatter_runs_beside_the_weight_gradient(monkeypatch):
    """LeNet's conv2 (12x12 -> 8x8, a batch-last scatter too small to split): in training, its data
    gradient and its weight gradient run side by side on two threads, with one thread's numbers up to
    float32 rounding (two threads make other groups of images, so other GEMM sizes)."""
    kind, fields, shape = "Convolution", {"num_output": 50, "kernel_size": 5}, (16, 20, 12, 12)

    def run(threads: int) -> list[np.ndarray]:
        monkeypatch.setattr(parallel, "_pool", parallel.Pool(threads))
        monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
        with parallel.gemms_in_pool():
            return passes(kind, fields, shape, fast=True, dtype=np.float32)

    one = run(1)
    layer = make_layer(conv_text(kind, fields), dtype=np.float32)
    layer.setup([random_blob(shape, dtype=np.float32)], blobs(1, dtype=np.float32))
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(2))
    assert layer.cpu is not None and layer.cpu.small_scatter(shape[0], 4)
    ran: list[int] = []
    together = parallel.together

    def counted(*tasks, work):
        ran.append(len(tasks))
        together(*tasks, work=work)

    monkeypatch.setattr(parallel, "together", counted)
    for a, b in zip(run(2), one):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max())
    assert ran == [2]


@pytest.mark.parametrize(
    "fields, shape, rows",
    [
        ({"num_output": 64, "kernel_size": 3, "pad": 1}, (2, 64, 56, 56), True),  # ResNet's 56 x 56
        ({"num_output": 32, "kernel_size": 5, "pad": 2}, (2, 32, 32, 32), True),  # 5 x 5, 32 wide
        ({"num_output": 32, "kernel_size": 5, "pad": 2}, (2, 32, 16, 16), False),  # CIFAR-10 quick's conv2
        ({"num_output": 64, "kernel_size": 3, "pad": 1}, (2, 64, 7, 7), False),  # narrow: batch-last im2col
        ({"num_output": 64, "kernel_size": 3, "stride": 2, "pad": 1}, (2, 64, 56, 56), False),  # stride 2
        ({"num_output": 64, "kernel_size": 3, "pad": 1, "group": 2}, (2, 64, 56, 56), False),  # groups
        ({"num_output": 20, "kernel_size": 5}, (2, 1, 28, 28), False),  # LeNet's conv1: C kw = 5
        ({"num_output": 64, "kernel_size": 1}, (2, 64, 56, 56), False),  # 1 x 1: no columns at all
    ],
)
def test_kernel_rows_take_wide_stride_1_convolutions(fields, shape, rows):
    """conv_rows runs the convolutions where it measured faster (the module's text), data gradient too."""
    layer = make_layer(conv_text("Convolution", fields), dtype=np.float32)
    layer.setup([random_blob(shape, seed=1, dtype=np.float32)], blobs(1, dtype=np.float32))
    assert layer.cpu is not None
    assert (layer.cpu.rows, layer.cpu.flipped_rows) == (rows, rows)


def test_the_cpu_path_outlives_reshapes_of_the_same_geometry():
    """Reshape runs before every forward: the same shapes keep the CpuConv (and its workspace of
    partial sums), whatever the batch; another image size makes a new one."""
    layer = make_layer(conv_text("Convolution", {"num_output": 4, "kernel_size": 3}), dtype=np.float32)
    bottom, top = [random_blob((2, 3, 8, 8), seed=1, dtype=np.float32)], blobs(1, dtype=np.float32)
    layer.setup(bottom, top)
    first = layer.cpu
    layer.reshape(bottom, top)
    assert layer.cpu is first
    bottom[0].reshape((5, 3, 8, 8))
    layer.reshape(bottom, top)
    assert layer.cpu is first
    bottom[0].reshape((5, 3, 10, 10))
    layer.reshape(bottom, top)
    assert layer.cpu is not first and layer.cpu is not None and layer.cpu.arguments[-1] == (8, 8)
