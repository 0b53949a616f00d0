"""The compiled direct convolution (engine.layers.conv_direct) gives the reference path's numbers in
float32: forward, weight, bias and data gradients, Convolution and Deconvolution, with every kernel
set this CPU runs, one thread or several, over geometries whose sizes leave partial tiles (output
channels, positions, input channels); and where it does not apply, the other paths run."""

from __future__ import annotations

import numpy as np
import pytest

from engine.layers import conv_cpu, conv_direct
from engine.layers.conv_shape import ConvShape
from engine.testing import blobs, make_layer, random_blob
from tests.engine.kernel_sets import kernel_set_fixture
from tests.engine.test_layer_conv_cpu import GEOMETRIES, conv_text, passes

pytestmark = pytest.mark.skipif(
    not conv_direct.available(), reason="the direct kernels are not built (no C compiler at install)"
)


# Sizes that leave a partial tile everywhere: 50 outputs (tiles of 8, 16, 32), 7 x 9 positions
# (tiles of 6 or 12), 20 input channels (weight-gradient tiles of 6 or 12); one image per thread or
# fewer images than threads (the forward splits output-channel tiles instead); groups of images.
DIRECT_GEOMETRIES = GEOMETRIES + [
    ("Convolution", {"num_output": 50, "kernel_size": 5, "pad": 2}, (3, 20, 7, 9)),
    ("Convolution", {"num_output": 70, "kernel_size": 3, "pad": 1}, (1, 13, 6, 6)),
    ("Convolution", {"num_output": 33, "kernel_size": 3, "stride": 2, "pad": 1}, (2, 17, 9, 8)),
    ("Convolution", {"num_output": 40, "kernel_h": 1, "kernel_w": 3, "dilation": 3}, (2, 5, 4, 11)),
    ("Deconvolution", {"num_output": 36, "kernel_size": 3, "pad": 1}, (2, 20, 5, 4)),
    # two groups of 32 outputs (CaffeNet's conv2, conv4 and conv5 have two groups)
    ("Convolution", {"num_output": 64, "kernel_size": 5, "pad": 2, "group": 2}, (3, 16, 7, 6)),
    # 100 positions an image: groups of 3 images (256 positions), the last one short
    ("Convolution", {"num_output": 20, "kernel_size": 3, "pad": 1}, (7, 6, 10, 10)),
    # strided data gradients by phases (conv_phases): a stride larger than the kernel (phases no tap
    # reaches), odd sizes, two strides and kernel sizes, a pad beyond the kernel (the GEMM path's),
    # and a strided Deconvolution (whose forward is a data gradient)
    ("Convolution", {"num_output": 20, "kernel_size": 2, "stride": 3}, (2, 6, 11, 10)),
    ("Convolution", {"num_output": 24, "kernel_size": 5, "stride": 2, "pad": 2}, (3, 7, 13, 9)),
    (
        "Convolution",
        {
            "num_output": 18,
            "kernel_h": 3,
            "kernel_w": 4,
            "stride_h": 2,
            "stride_w": 3,
            "pad_h": 1,
            "pad_w": 2,
        },
        (2, 5, 9, 14),
    ),
    ("Convolution", {"num_output": 16, "kernel_size": 3, "stride": 2, "pad": 3}, (2, 4, 7, 7)),
    ("Deconvolution", {"num_output": 20, "kernel_size": 4, "stride": 2, "pad": 1}, (2, 12, 5, 6)),
]


kernel_set = kernel_set_fixture(conv_direct)


def within_float32(fast: list[np.ndarray], reference: list[np.ndarray]) -> None:
    for what, a, b in zip(("top", "weight diff", "bias diff", "bottom diff"), fast, reference):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5 * np.abs(b).max(), err_msg=what)


@pytest.fixture(params=["tiles", "rows"])
def every_weight_gradient(request, monkeypatch):
    """The weight gradient direct for any geometry (not only where it is faster): by tiles of
    output channels x runs of (column, channel), or by vectors along the output rows (where the
    stride along the rows is 1 and the kernel at most 5 wide; elsewhere the GEMM path)."""
    monkeypatch.setattr(conv_direct, "MIN_GRADIENT_FILL", 0.0 if request.param == "tiles" else 2.0)
    monkeypatch.setattr(conv_direct, "MAX_WEIGHT_SHARE", float("inf"))
    monkeypatch.setattr(conv_direct, "MIN_GRADIENT_LANES", 0)  # every kernel set's


@pytest.mark.parametrize("kind, fields, shape", DIRECT_GEOMETRIES)
def test_direct_path_equals_reference(
    monkeypatch, kernel_set, threads, every_weight_gradient, kind, fields, shape
):
    monkeypatch.setattr(conv_cpu, "MIN_GROUP_CHANNELS", 1)  # depthwise too
    monkeypatch.setattr(conv_direct, "MIN_GROUP_OUTPUTS", 1)  # groups of any size
    fast = passes(kind, fields, shape, fast=True, dtype=np.float32)
    reference = passes(kind, fields, shape, fast=False, dtype=np.float64)
    within_float32(fast, [r.astype(np.float32) for r in reference])


def counted(monkeypatch) -> dict[str, int]:
    """Counts of the DirectConv calls that ran (returned True)."""
    counts = {"forward": 0, "data_gradient": 0, "weight_gradient": 0, "weight_gradient_by_rows": 0}
    for name in counts:
        original = getattr(conv_direct.DirectConv, name)

        def wrapper(self, *args, _original=original, _name=name, **kwargs):
            done = _original(self, *args, **kwargs)
            counts[_name] += bool(done)
            return done

        monkeypatch.setattr(conv_direct.DirectConv, name, wrapper)
    return counts


def direct_passes(monkeypatch, fields: dict, shape: tuple, dtype=np.float32) -> dict[str, int]:
    counts = counted(monkeypatch)
    passes("Convolution", fields, shape, True, dtype)
    return counts


def test_float32_layers_take_the_direct_path(monkeypatch):
    """A float32 convolution runs all three passes direct (stride 1, runs of 3 x 32 channels that fill
    whole tiles, a weight no larger than the output); the rest takes the GEMM path. (The rules of
    shape, with any kernel set: the one of vector width is the next test's.)"""
    monkeypatch.setattr(conv_direct, "MIN_GRADIENT_LANES", 0)
    same = {"num_output": 8, "kernel_size": 3, "pad": 1}
    all_three = {"forward": 1, "data_gradient": 1, "weight_gradient": 1, "weight_gradient_by_rows": 0}
    assert direct_passes(monkeypatch, same, (2, 32, 12, 12)) == all_three
    # a strided data gradient by phases (conv_phases); with dilation too, the GEMM path's scatter
    strided = {"num_output": 8, "kernel_size": 3, "stride": 2, "pad": 1}
    assert direct_passes(monkeypatch, strided, (8, 32, 12, 12))["data_gradient"] == 1
    dilated = strided | {"dilation": 2, "pad": 2}
    assert direct_passes(monkeypatch, dilated, (8, 32, 12, 12))["data_gradient"] == 0
    # a first layer's 3 channels x 5 columns fill 15 of a tile's lanes: vectors along the rows instead;
    # with stride 2 along the rows, or a kernel 7 wide, neither: the GEMM path's weight gradient
    first = direct_passes(monkeypatch, same | {"kernel_size": 5}, (2, 3, 12, 12))
    assert first["weight_gradient"] == 1 and first["weight_gradient_by_rows"] == 1
    for fields in (same | {"kernel_size": 5, "stride": 2}, same | {"kernel_size": 7}):
        assert direct_passes(monkeypatch, fields, (2, 3, 12, 12))["weight_gradient"] == 0
    # a weight larger than the batch's output (ResNet's 7 x 7 x 512): the GEMM path's weight gradient
    assert direct_passes(monkeypatch, same, (1, 32, 1, 1)) == all_three | {"weight_gradient": 0}
    # LeNet's conv2 (12 x 12 from 8 x 8): the data gradient too, dY padded by 4 (its zero rows skipped)
    lenet = direct_passes(monkeypatch, {"num_output": 50, "kernel_size": 5}, (4, 20, 12, 12))
    assert lenet["data_gradient"] == 1
    assert direct_passes(monkeypatch, same, (2, 32, 12, 12), np.float64) == dict.fromkeys(all_three, 0)


def test_the_weight_gradient_runs_direct_with_avx512_vectors_only(monkeypatch, kernel_set):
    """Narrower vectors (AVX2's 8 floats, the baseline's 4) leave the weight gradient, which is bound
    by the FMAs, to the GEMM path; the forward and data gradient run direct with any set."""
    same = {"num_output": 8, "kernel_size": 3, "pad": 1}
    wide = kernel_set == "avx512"
    counts = direct_passes(monkeypatch, same, (2, 32, 12, 12))
    assert counts == {"forward": 1, "data_gradient": 1, "weight_gradient": wide, "weight_gradient_by_rows": 0}
    first = direct_passes(monkeypatch, same | {"kernel_size": 5}, (2, 3, 12, 12))
    assert first["weight_gradient_by_rows"] == int(wide)


def test_groups_of_few_outputs_keep_the_gemm_path():
    """Two groups of 4 outputs fill few lanes of a tile: the GEMM path. Two of 32 run direct."""
    for outputs, direct in ((8, False), (64, True)):
        text = conv_text("Convolution", {"num_output": outputs, "kernel_size": 3, "group": 2})
        layer = make_layer(text, dtype=np.float32)
        layer.setup([random_blob((2, 8, 6, 6), dtype=np.float32)], blobs(1, dtype=np.float32))
        assert layer.cpu is not None and (layer.cpu.direct is not None) == direct


def test_arrays_the_kernels_cannot_take_are_left_to_the_caller():
    """Not contiguous, not float32, or not the geometry's shapes: refused, nothing written (the
    kernels index memory by the geometry alone)."""
    direct = conv_direct.DirectConv(ConvShape(4, 6, 1, (3, 3), (1, 1), (1, 1), (1, 1), (5, 5), (5, 5)))
    w = np.ones((6, 4, 3, 3), np.float32)
    x = np.ones((2, 4, 5, 10), np.float32)[..., ::2]  # not contiguous
    y = np.zeros((2, 6, 5, 5), np.float32)
    assert not direct.forward(x, w, y) and not y.any()
    assert not direct.forward(np.ones((2, 4, 5, 5)), w, y)  # float64
    assert direct.forward(np.ascontiguousarray(x), w, y) and np.allclose(y[:, :, 2, 2], 36)
    assert not direct.forward(np.ones((2, 4, 5, 6), np.float32), w, y)  # another input size
    assert not direct.forward(np.ones((2, 4, 5, 5), np.float32), w, np.zeros((3, 6, 5, 5), np.float32))
    dx = np.zeros((2, 4, 5, 5), np.float32)
    assert not direct.data_gradient(np.ones((2, 6, 4, 5), np.float32), w, dx) and not dx.any()
    dw = np.zeros((6, 4, 3, 3), np.float32)
    assert not direct.weight_gradient(
        np.ones((2, 4, 5, 5), np.float32), np.ones((2, 6, 5, 5), np.float32), dw[:3]
    )
    strided = conv_direct.DirectConv(ConvShape(4, 6, 1, (3, 3), (2, 2), (1, 1), (1, 1), (5, 5), (3, 3)))
    dx = np.zeros((2, 4, 5, 6), np.float32)
    assert not strided.data_gradient(np.ones((2, 6, 3, 3), np.float32), w, dx) and not dx.any()
    dilated = conv_direct.DirectConv(ConvShape(4, 6, 1, (3, 3), (2, 2), (2, 2), (2, 2), (5, 5), (3, 3)))
    assert not dilated.data_gradient(np.ones((2, 6, 3, 3), np.float32), w, np.zeros((2, 4, 5, 5), np.float32))
