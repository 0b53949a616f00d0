"""Im2col layer: the column layout Caffe gives, N-D, gradients, CHECKs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob


def im2col_text(**fields: object) -> str:
    body = " ".join(
        " ".join(f"{k}: {x}" for x in v) if isinstance(v, list) else f"{k}: {v}" for k, v in fields.items()
    )
    return f'name: "cols" type: "Im2col" convolution_param {{ {body} }}'


def run(text, shape, xp=np):
    layer = make_layer(text, xp)
    bottom, top = [random_blob(shape, xp)], blobs(1, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    return layer, bottom[0], top[0]


@pytest.mark.parametrize(
    "fields, shape, kernel, stride, pad, dilation",
    [
        ({"kernel_size": 3, "stride": 2}, (2, 3, 6, 5), (3, 3), (2, 2), (0, 0), (1, 1)),  # TestForward
        ({"kernel_h": 5, "kernel_w": 3, "stride": 2}, (2, 3, 6, 5), (5, 3), (2, 2), (0, 0), (1, 1)),
        ({"kernel_size": 3, "pad": 1, "dilation": 2}, (1, 2, 5, 6), (3, 3), (1, 1), (1, 1), (2, 2)),
        (
            {"kernel_size": [2, 2, 3], "stride": [1, 2, 1], "pad": [0, 1, 1]},
            (2, 2, 3, 4, 5),
            (2, 2, 3),
            (1, 2, 1),
            (0, 1, 1),
            (1, 1, 1),
        ),
    ],
)
def test_forward_lays_out_caffes_columns(xp, fields, shape, kernel, stride, pad, dilation):
    _, x, y = run(im2col_text(**fields), shape, xp)
    x = np.pad(host(x.data), [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out = [
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, p, d, k, st in zip(shape[2:], pad, dilation, kernel, stride)
    ]
    assert y.shape == (shape[0], shape[1] * math.prod(kernel), *out)
    y = host(y.data)
    for channel in range(y.shape[1]):
        c, k = divmod(channel, math.prod(kernel))
        offset = np.unravel_index(k, kernel)
        for pos in np.ndindex(*out):
            at = tuple(q * st + o * d for q, st, o, d in zip(pos, stride, offset, dilation))
            np.testing.assert_array_equal(y[(slice(None), channel, *pos)], x[(slice(None), c, *at)])


@pytest.mark.parametrize(
    "fields, shape",
    [
        ({"kernel_size": 3, "stride": 2, "pad": 1}, (2, 2, 5, 4)),
        ({"kernel_h": 2, "kernel_w": 3, "dilation": 2}, (1, 2, 5, 6)),
        ({"kernel_size": 2, "axis": 2}, (2, 2, 2, 3, 3)),
    ],
)
def test_gradients(xp, fields, shape):
    layer = make_layer(im2col_text(**fields), xp)
    GradientChecker().check(layer, [random_blob(shape, xp)], blobs(1, xp))


def test_caffe_checks():
    with pytest.raises(LayerSetupError, match="2D convolution") as info:
        run(im2col_text(kernel_h=2, kernel_w=2), (1, 2, 4, 4, 4))
    assert "'cols'" in str(info.value)
    with pytest.raises(LayerSetupError, match="nonzero"):
        run(im2col_text(kernel_size=0), (1, 2, 4, 4))
    with pytest.raises(LayerSetupError, match="exceeds"):
        run(im2col_text(kernel_size=5), (1, 2, 4, 4))


def test_kernel_past_the_input_by_less_than_the_stride_reads_zeros(xp):
    """Caffe: (2 - 3) / 2 + 1 = 1 in C++ division; im2col writes 0 for the taps past the 2 x 2 input."""
    layer, x, y = run(im2col_text(kernel_size=3, stride=2), (2, 3, 2, 2), xp)
    assert y.shape == (2, 3 * 9, 1, 1)
    cols = host(y.data).reshape(2, 3, 3, 3)  # (n, c, kernel row, kernel column)
    want = np.zeros((2, 3, 3, 3))
    want[:, :, :2, :2] = host(x.data)
    np.testing.assert_array_equal(cols, want)
    GradientChecker().check(layer, [random_blob((2, 3, 2, 2), xp)], blobs(1, xp))
