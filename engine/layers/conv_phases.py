"""A strided convolution's data gradient as stride-1 convolutions, one per phase of the input.

With stride s (dilation 1), the input row iy = s a + r (its phase r < s) takes dy's rows only
through the kernel rows ky = k0 + s t, k0 = (r + p) mod s, t < T = ceil((kh - k0) / s):
dx[r + s a] = sum_t w[k0 + s t] dy[a + e - t] with e = (r + p - k0) / s. That is a stride-1
convolution of dy, padded by T - 1 - e above (and by what its last rows need below), with the
sub-kernel w[k0::s] turned round: the direct kernels' forward, writing every s-th row and column of
dx. The phases of both axes pair up (s_h x s_w of them); their kernels hold the kernel's taps once
between them, so the data gradient costs what a forward does, without the GEMM path's scatter.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


def geometry(
    c: int,
    size_in: tuple[int, ...],
    o: int,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pad: tuple[int, ...],
    dilation: tuple[int, ...],
    size_out: tuple[int, ...],
    steps: tuple[int, int],
    pad_end: tuple[int, ...] | None = None,
    out_strides: tuple[int, int, int] | None = None,
) -> Any:
    """The kernels' geometry (engine/native/direct_conv.c): c channels of size_in to o of size_out,
    images steps[0] and steps[1] floats apart in the input and the output; padding pad above and
    left, pad_end (default: pad) below and right; output channels, rows and columns out_strides
    floats apart (default: contiguous)."""
    oh, ow = size_out
    end = pad if pad_end is None else pad_end
    strides = (oh * ow, ow, 1) if out_strides is None else out_strides
    values = [c, *size_in, o, *kernel, *stride, *pad, *dilation, *size_out, *steps, *end, *strides]
    return np.array(values, np.int64)


class Phase(NamedTuple):
    """One phase (r_h, r_w) of the input: its rows r_h::s_h and columns r_w::s_w of dx. ``geometry``
    is None where no kernel tap reaches it (a stride larger than the kernel): those are zeros."""

    start: tuple[int, int]  # (r_h, r_w)
    taps: Any  # the kernel's kh, kw, then the sub-kernel's first row, row step, first column, column step
    geometry: Any


def _axis(k: int, s: int, p: int, size: int, out: int) -> list[tuple[int, int, int, int, int, int]] | None:
    """Per phase r of one axis: (r, positions, k0, taps, pad above, pad below); None where a phase
    would need a negative padding (a pad of more than the kernel: left to the GEMM path)."""
    found = []
    for r in range(s):
        count = (size - r + s - 1) // s
        if count <= 0:
            continue
        k0 = (r + p) % s
        taps = max(0, (k - k0 + s - 1) // s)
        before = taps - 1 - (r + p - k0) // s
        if taps and before < 0:
            return None
        found.append((r, count, k0, taps, before, max(0, count + taps - 1 - out - before)))
    return found


def phases(
    c: int, o: int, kernel: tuple[int, ...], stride: tuple[int, ...], pad: tuple[int, ...], shape: Any
) -> list[Phase] | None:
    """The data gradient of one group (c input channels, o output channels) of a 2-D convolution of
    stride > 1 and dilation 1, as stride-1 forwards of dy: dy of o channels of ``shape.conv_out``,
    into dx of c channels of ``shape.conv_in``; None where a phase cannot be written so."""
    h, w = shape.conv_in
    axes = [_axis(*args) for args in zip(kernel, stride, pad, shape.conv_in, shape.conv_out)]
    if axes[0] is None or axes[1] is None:
        return None
    steps = (shape.num_output * int(np.prod(shape.conv_out)), shape.channels * h * w)
    found = []
    for ry, ay, ky, ty, by, ey in axes[0]:
        for rx, ax, kx, tx, bx, ex in axes[1]:
            g = None
            if ty and tx:
                g = geometry(
                    o, shape.conv_out, c, (ty, tx), (1, 1), (by, bx), (1, 1), (ay, ax), steps,
                    pad_end=(ey, ex), out_strides=(h * w, stride[0] * w, stride[1]),
                )  # fmt: skip
            taps = np.array([*kernel, ky, stride[0], kx, stride[1]], np.int64)
            found.append(Phase((ry, rx), taps, g))
    return found
