"""im2col / col2im over a whole batch with any number of spatial axes, for numpy and cupy.

Two column layouts, both giving a convolution of the whole batch as one (batched) GEMM:

* batch-inner, ``im2col`` / ``col2im``: columns (C, *kernel, *out, N), entry [c, *k, *o, n] =
  x[n, c, o * stride + k * dilation - pad] (zero in the padding). A channel group's columns are one
  (C/G * prod(kernel), prod(out) * N) matrix. Each kernel offset copies one strided slice whose
  contiguous runs are N or more values long, which is what keeps numpy fast for small outputs.
* per-image, ``im2col_images`` / ``col2im_images``: columns (N, C, *kernel, *out), Caffe's own
  per-image layout; a GEMM against them writes (N, C_out, *out) directly, with no transposes, which
  wins when an image's output is large (and always on the GPU, where 2-D has fused kernels).

``col2im*`` are the adjoints: every column entry is added back onto the pixel it came from.
Scratch arrays (``out``, ``padded``) may be passed in to be reused between calls.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from engine import backend, kernels

Ints = Sequence[int]


def conv_output_shape(
    spatial: Ints, kernel: Ints, pad: Ints, stride: Ints, dilation: Ints
) -> tuple[int, ...]:
    """Caffe's convolution output size per axis: (in + 2 pad - (dilation (kernel - 1) + 1)) / stride + 1."""
    return tuple(
        (i + 2 * p - (d * (k - 1) + 1)) // s + 1
        for i, k, p, s, d in zip(spatial, kernel, pad, stride, dilation)
    )


def kernel_offsets(kernel: Ints) -> Iterator[tuple[int, ...]]:
    """Every kernel offset, in raster order (the order of Caffe's column rows)."""
    return itertools.product(*(range(k) for k in kernel))


def window_slices(offset: Ints, out: Ints, stride: Ints, dilation: Ints | None = None) -> tuple[slice, ...]:
    """The strided slice of a padded array that kernel offset ``offset`` reads for all outputs."""
    dilation = dilation or (1,) * len(offset)
    return tuple(
        slice(k * d, k * d + s * (o - 1) + 1, s) for k, o, s, d in zip(offset, out, stride, dilation)
    )


def padded_shape(spatial: Ints, pad: Ints) -> tuple[int, ...]:
    return tuple(s + 2 * p for s, p in zip(spatial, pad))


def batch_first(a: Any, out: Any = None) -> Any:
    """(C, *spatial, N) -> (N, C, *spatial), written into ``out`` when given, else a view of a copy.

    Done as a batch of 2-D transposes and then a copy with long contiguous runs: numpy's one-step
    permutation copy of this kind is two to four times slower (the opposite direction is fast as
    it is: ``xp.moveaxis``).
    """
    xp = backend.get_array_module(a)
    c, n = a.shape[0], a.shape[-1]
    channel_major = xp.ascontiguousarray(a.reshape(c, -1, n).swapaxes(1, 2)).reshape(c, n, *a.shape[1:-1])
    if out is None:
        return channel_major.swapaxes(0, 1)
    out[...] = channel_major.swapaxes(0, 1)
    return out


def inner(pad: Ints, spatial: Ints) -> tuple[slice, ...]:
    """The slice of a padded (C, *padded, N) array that holds the image itself."""
    return (slice(None), *(slice(p, p + s) for s, p in zip(spatial, pad)))


def im2col(
    x: Any, kernel: Ints, pad: Ints, stride: Ints, dilation: Ints, out: Any = None, padded: Any = None
) -> Any:
    """Columns (C, *kernel, *out, N) of the batch ``x`` (N, C, *spatial).

    ``padded``, when given, is a (C, *padded, N) scratch whose border is zero (only its interior is
    written here, so a reused one stays valid)."""
    xp = backend.get_array_module(x)
    n, c, *spatial = x.shape
    out_shape = conv_output_shape(spatial, kernel, pad, stride, dilation)
    if padded is None:
        padded = xp.zeros((c, *padded_shape(spatial, pad), n), x.dtype)
    padded[inner(pad, spatial)] = xp.moveaxis(x, 0, -1)
    col = xp.empty((c, *kernel, *out_shape, n), x.dtype) if out is None else out
    for offset in kernel_offsets(kernel):
        col[(slice(None), *offset)] = padded[
            (slice(None), *window_slices(offset, out_shape, stride, dilation))
        ]
    return col


def col2im(
    col: Any,
    spatial: Ints,
    kernel: Ints,
    pad: Ints,
    stride: Ints,
    dilation: Ints,
    out: Any = None,
    padded: Any = None,
) -> Any:
    """The batch (N, C, *spatial) whose pixels sum the column entries (C, *kernel, *out, N) read from them.

    Written into ``out`` when given; ``padded`` is an optional (C, *padded, N) scratch."""
    xp = backend.get_array_module(col)
    c, n = col.shape[0], col.shape[-1]
    out_shape = col.shape[1 + len(kernel) : -1]
    if padded is None:
        padded = xp.zeros((c, *padded_shape(spatial, pad), n), col.dtype)
    else:
        padded[...] = 0
    for offset in kernel_offsets(kernel):
        padded[(slice(None), *window_slices(offset, out_shape, stride, dilation))] += col[
            (slice(None), *offset)
        ]
    return batch_first(padded[inner(pad, spatial)], out)


def im2col_images(
    x: Any, kernel: Ints, pad: Ints, stride: Ints, dilation: Ints, out: Any = None, padded: Any = None
) -> Any:
    """Per-image columns (N, C, *kernel, *out) of the batch ``x`` (N, C, *spatial).

    ``padded``: an optional (N, C, *padded) scratch with a zero border (only its interior is written).
    """
    xp = backend.get_array_module(x)
    n, c, *spatial = x.shape
    out_shape = conv_output_shape(spatial, kernel, pad, stride, dilation)
    col = xp.empty((n, c, *kernel, *out_shape), x.dtype) if out is None else out
    if kernels.im2col_2d(x, col, kernel, pad, stride, dilation):
        return col
    if any(pad):
        if padded is None:
            padded = xp.zeros((n, c, *padded_shape(spatial, pad)), x.dtype)
        padded[(slice(None), *inner(pad, spatial))] = x
        x = padded
    step = x.strides[2:]
    windows = xp.lib.stride_tricks.as_strided(
        x,
        shape=col.shape,
        strides=(
            *x.strides[:2],
            *(s * d for s, d in zip(step, dilation)),
            *(s * t for s, t in zip(step, stride)),
        ),
    )
    col[...] = windows
    return col


def col2im_images(
    col: Any,
    spatial: Ints,
    kernel: Ints,
    pad: Ints,
    stride: Ints,
    dilation: Ints,
    out: Any = None,
    padded: Any = None,
) -> Any:
    """The batch (N, C, *spatial) whose pixels sum the per-image column entries (N, C, *kernel, *out).

    Written into ``out`` when given; ``padded`` is an optional (N, C, *padded) scratch."""
    xp = backend.get_array_module(col)
    n, c = col.shape[:2]
    out_shape = col.shape[2 + len(kernel) :]
    if out is None:
        out = xp.empty((n, c, *spatial), col.dtype)
    if kernels.col2im_2d(col, out, kernel, pad, stride, dilation):
        return out
    if any(pad):
        if padded is None:
            padded = xp.empty((n, c, *padded_shape(spatial, pad)), col.dtype)
        target = padded
    else:
        target = out
    target[...] = 0
    everything = (slice(None), slice(None))
    for offset in kernel_offsets(kernel):
        target[(*everything, *window_slices(offset, out_shape, stride, dilation))] += col[
            (*everything, *offset)
        ]
    if target is not out:
        out[...] = padded[(slice(None), *inner(pad, spatial))]
    return out
