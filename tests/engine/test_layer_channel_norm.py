"""The compiled BatchNorm kernels (engine.layers.channel_norm) give a float64 reference's numbers in
float32: the forward's statistics, x_norm and y (with and without a Scale folded in), and the
backward's dx and the Scale's gradients, with batch or global statistics, in place or not, with
every kernel set this CPU runs, on one thread or several, over shapes that leave partial vectors;
and arrays they cannot take are left untouched."""

from __future__ import annotations

import numpy as np
import pytest

from engine.layers import channel_norm
from tests.engine.kernel_sets import kernel_set_fixture

pytestmark = pytest.mark.skipif(
    not channel_norm.available(), reason="the kernels are not built (no C compiler at install)"
)

# (N, C, S): S past whole pairs of vectors (37 = 32 + 5), a single value a row, exact vectors,
# ResNet's 7 x 7 maps, and one image of one channel.
SHAPES = [(2, 3, 37), (3, 5, 1), (2, 4, 64), (4, 9, 49), (1, 1, 20)]
EPS = 1e-5


kernel_set = kernel_set_fixture(channel_norm)


def data(shape, seed=0):
    """Values around 5 with a spread of 3 (centring matters), float32."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 3 + 5).astype(np.float32)


def factors(c, affine, seed=1):
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.5, 2, c).astype(np.float32) if affine else None
    bias = rng.uniform(-1, 1, c).astype(np.float32) if affine == "bias" else None
    return scale, bias


def reference_forward(x, batch, mean, var, scale, bias, relu=False):
    x = x.astype(np.float64)
    if batch:
        mean = x.mean(axis=(0, 2))
        var = ((x - mean[:, None]) ** 2).mean(axis=(0, 2))
    std = np.sqrt(np.asarray(var, np.float64) + EPS)
    x_norm = (x - np.asarray(mean, np.float64)[:, None]) / std[:, None]
    y = x_norm if scale is None else x_norm * scale[:, None] + (0 if bias is None else bias[:, None])
    return mean, var, std, x_norm, np.maximum(y, 0) if relu else y


def reference_backward(dy, x_norm, batch, std, scale, keep=None):
    dy, x_norm = dy.astype(np.float64), x_norm.astype(np.float64)
    if keep is not None:  # through a ReLU whose output is keep
        dy = np.where(keep > 0, dy, 0)
    scaled = dy if scale is None else dy * scale[:, None]
    if batch:
        mean_dy = scaled.mean(axis=(0, 2))[:, None]
        mean_dot = (scaled * x_norm).mean(axis=(0, 2))[:, None]
        dx = (scaled - mean_dy - x_norm * mean_dot) / std[:, None]
    else:
        dx = scaled / std[:, None]
    return dx, (dy * x_norm).sum(axis=(0, 2)), dy.sum(axis=(0, 2))


def close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=3e-5, atol=3e-5 * max(1.0, np.abs(b).max()), err_msg=what)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("affine", [None, "scale", "bias", "relu"])
@pytest.mark.parametrize("in_place", [False, True])
def test_forward_matches_the_reference(kernel_set, threads, shape, batch, affine, in_place):
    x = data(shape)
    c = shape[1]
    relu = affine == "relu"
    scale, bias = factors(c, "bias" if relu else affine)
    given_mean = np.linspace(4, 6, c).astype(np.float32)
    given_var = np.linspace(5, 12, c).astype(np.float32)
    mean, var, std = (given_mean.copy(), given_var.copy(), np.zeros(c, np.float32))
    expected = reference_forward(x, batch, given_mean, given_var, scale, bias, relu)
    x_norm = np.full(shape, np.nan, np.float32)
    y = x if in_place else np.full(shape, np.nan, np.float32)
    assert channel_norm.forward(x, x_norm, y, batch, EPS, (mean, var, std), scale, bias, relu)
    for what, got, want in zip(("mean", "var", "std", "x_norm", "y"), (mean, var, std, x_norm, y), expected):
        close(got, want, what)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("affine", [None, "scale", "relu"])
@pytest.mark.parametrize("in_place", [False, True])
def test_backward_matches_the_reference(kernel_set, threads, shape, batch, affine, in_place):
    c = shape[1]
    _, _, std, x_norm, _ = reference_forward(data(shape), True, None, None, None, None)
    x_norm, std = x_norm.astype(np.float32), std.astype(np.float32)
    dy = data(shape, seed=2) - 5
    scale, _ = factors(c, affine and "scale")
    keep = (x_norm - 0.3).astype(np.float32) if affine == "relu" else None  # a ReLU's output, 0 or not
    dx_want, d_scale_want, d_bias_want = reference_backward(dy, x_norm, batch, std, scale, keep)
    d_scale, d_bias = np.ones(c, np.float32), np.full(c, 2, np.float32)  # the gradients add up
    dx = dy if in_place else np.full(shape, np.nan, np.float32)
    assert channel_norm.backward(dy, x_norm, dx, batch, std, scale, d_scale, d_bias, keep)
    close(dx, dx_want, "dx")
    close(d_scale, d_scale_want + 1, "d_scale")
    close(d_bias, d_bias_want + 2, "d_bias")


def test_the_relu_passes_nan_on_and_no_gradient_through_it(kernel_set):
    """Caffe's ReLU (std::max(x, 0)) gives NaN for NaN; its gradient is dy only where its output > 0."""
    shape = (1, 2, 37)
    x = data(shape)
    x[0, 0, [3, 36]] = np.nan  # one in a vector, one in the tail
    stats = (np.full(2, 5, np.float32), np.full(2, 9, np.float32), np.zeros(2, np.float32))
    scale, bias = factors(2, "bias")
    y = np.empty_like(x)
    assert channel_norm.forward(x, np.empty_like(x), y, False, EPS, stats, scale, bias, True)
    assert np.isnan(y[0, 0, [3, 36]]).all() and (y[~np.isnan(y)] >= 0).all()
    dy, dx = np.ones(shape, np.float32), np.empty(shape, np.float32)
    std = np.ones(2, np.float32)
    assert channel_norm.backward(dy, np.zeros(shape, np.float32), dx, False, std, None, None, None, y)
    np.testing.assert_array_equal(dx, (y > 0).astype(np.float32))


def test_backward_without_dx_sums_the_scale_gradients_only(kernel_set):
    shape = (2, 3, 37)
    x_norm, dy = data(shape), data(shape, seed=3)
    d_scale, d_bias = np.zeros(3, np.float32), np.zeros(3, np.float32)
    std = np.ones(3, np.float32)
    assert channel_norm.backward(dy, x_norm, None, True, std, None, d_scale, None)
    assert channel_norm.backward(dy, x_norm, None, True, std, None, None, d_bias)
    _, d_scale_want, d_bias_want = reference_backward(dy, x_norm, True, std, None)
    close(d_scale, d_scale_want, "d_scale")
    close(d_bias, d_bias_want, "d_bias")


def test_arrays_it_cannot_take_are_left_untouched():
    shape = (2, 3, 8)
    x, x_norm, y = data(shape), np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    stats = tuple(np.zeros(3, np.float32) for _ in range(3))
    wide = np.zeros((2, 3, 16), np.float32)
    refused = [
        (x.astype(np.float64), x_norm, y, stats, None),  # float64
        (wide[:, :, ::2], x_norm, y, stats, None),  # not contiguous
        (x, np.zeros((2, 3, 9), np.float32), y, stats, None),  # another shape
        (x, x_norm, y, (np.zeros(2, np.float32), *stats[1:]), None),  # statistics of 2 channels
        (x, x_norm, y, stats, np.ones(4, np.float32)),  # a scale of 4 channels
        (x, x_norm, y.tolist(), stats, None),  # not an array
    ]
    for args in refused:
        a, n, t, s, scale = args
        assert not channel_norm.forward(a, n, t, True, EPS, s, scale, None)
    assert not x_norm.any() and not y.any() and not any(s.any() for s in stats)
    dx = np.zeros(shape, np.float32)
    assert not channel_norm.backward(x, x_norm, dx, True, np.ones(2, np.float32), None, None, None)
    assert not channel_norm.backward(x, x_norm.astype(np.float64), dx, True, stats[2], None, None, None)
    assert not dx.any()
