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
Scratch arrays (``out``, ``padded``) may be passed in to be reused between calls. The two col2im
with strided windows split their adds by channel or image over engine.parallel's threads; the
copies and the contiguous adds of ``col2im_spans`` are bound by memory traffic, which a second
thread does not speed up (measured: they run slower split), so they stay whole.

For stride 1 the batch-inner adjoint has a faster form, ``col2im_spans``: when the columns of one
(channel, kernel offset) are laid out as the padded image's own positions (``spans_view``, with
zeros where the padded row is wider than the output), the entries a kernel offset adds are one
contiguous run of the padded image, so each offset is one long add instead of a strided one per
output row.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

from engine import backend, kernels, parallel

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
    pixels = math.prod(a.shape[1:-1])  # not -1: the batch may be empty
    channel_major = xp.ascontiguousarray(a.reshape(c, pixels, n).swapaxes(1, 2)).reshape(c, n, *a.shape[1:-1])
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
    col = xp.empty((c, *kernel, *out_shape, n), x.dtype) if out is None else out
    padded[inner(pad, spatial)] = xp.moveaxis(x, 0, -1)
    im2col_rows(padded, stride, dilation, col, 0, out_shape[0] if out_shape else 0)
    return col


def im2col_rows(padded: Any, stride: Ints, dilation: Ints, col: Any, first: int, stop: int) -> None:
    """The columns (C, *kernel, *out, N) of output rows ``first:stop`` (along the first spatial axis)
    from a filled padded (C, *padded, N) batch: every kernel offset's window at once, one strided
    copy in runs of out[-1] * N values."""
    xp = backend.get_array_module(padded)
    ndim = len(stride)
    if ndim == 0:
        col[...] = padded
        return
    step = padded.strides[1:-1]
    target = col[(slice(None),) * (1 + ndim) + (slice(first, stop),)]
    target[...] = xp.lib.stride_tricks.as_strided(
        padded[(slice(None), slice(first * stride[0], None))],
        shape=target.shape,
        strides=(
            padded.strides[0],
            *(s * d for s, d in zip(step, dilation)),
            *(s * t for s, t in zip(step, stride)),
            padded.strides[-1],
        ),
    )


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
        padded = xp.empty((c, *padded_shape(spatial, pad), n), col.dtype)
    if out is None:
        out = xp.empty((n, c, *spatial), col.dtype)
    windows = [
        (offset, window_slices(offset, out_shape, stride, dilation)) for offset in kernel_offsets(kernel)
    ]

    def channels(start: int, stop: int) -> None:
        part, col_part = padded[start:stop], col[start:stop]
        part[...] = 0
        for offset, window in windows:
            part[(slice(None), *window)] += col_part[(slice(None), *offset)]
        batch_first(part[inner(pad, spatial)], out[:, start:stop])

    parallel.run(channels, c, xp, parallel.grain(col[0:1].size))
    return out


def spans_view(spans: Any, groups: int, out_shape: Ints, padded: Ints, n: int) -> Any:
    """A view (*out[:-1], groups, rows / groups, out[-1] * n) of the span columns ``spans`` (rows,
    span_length(...)): a (batched) GEMM writing its (groups, rows / groups, prod(out) * n) result
    there, one output row at a time, leaves it laid out as ``col2im_spans`` reads it. The gaps it
    does not write must hold zeros."""
    xp = backend.get_array_module(spans)
    item, row = spans.itemsize, spans.strides[0]
    steps = [n * math.prod(padded[d + 1 :]) for d in range(len(padded))]  # a padded position's stride
    shape = (*out_shape[:-1], groups, spans.shape[0] // groups, out_shape[-1] * n)
    strides = (*(s * item for s in steps[:-1]), row * (spans.shape[0] // groups), row, item)
    return xp.lib.stride_tricks.as_strided(spans, shape=shape, strides=strides)


def span_length(out_shape: Ints, padded: Ints, n: int) -> int:
    """Values per (channel, kernel offset) row of span columns: first to last output position,
    counted in the padded image (C, *padded, N)."""
    steps = [n * math.prod(padded[d + 1 :]) for d in range(len(padded))]
    return sum((o - 1) * s for o, s in zip(out_shape, steps)) + n


def col2im_spans(
    spans: Any, spatial: Ints, kernel: Ints, pad: Ints, dilation: Ints, out: Any, padded: Any = None
) -> Any:
    """col2im for stride 1 from span columns (C, *kernel, span_length) (see ``spans_view``) into
    ``out`` (N, C, *spatial); ``padded`` is an optional (C, *padded, N) scratch. Each column entry is
    added to the same pixel as by ``col2im``, in the same order of kernel offsets."""
    xp = backend.get_array_module(spans)
    n, c = out.shape[:2]
    full = padded_shape(spatial, pad)
    if padded is None:
        padded = xp.empty((c, *full, n), spans.dtype)
    steps = [n * math.prod(full[d + 1 :]) for d in range(len(full))]
    length = spans.shape[-1]
    flat, rows = padded.reshape(c, -1), spans.reshape(c, -1, length)
    flat[...] = 0
    for i, offset in enumerate(kernel_offsets(kernel)):
        start = sum(k * d * s for k, d, s in zip(offset, dilation, steps))
        flat[:, start : start + length] += rows[:, i]
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
    if any(pad) and padded is None:
        padded = xp.empty((n, c, *padded_shape(spatial, pad)), col.dtype)
    everything = (slice(None), slice(None))
    windows = [
        (offset, window_slices(offset, out_shape, stride, dilation)) for offset in kernel_offsets(kernel)
    ]

    def images(start: int, stop: int) -> None:
        target = padded[start:stop] if any(pad) else out[start:stop]
        target[...] = 0
        for offset, window in windows:
            target[(*everything, *window)] += col[(slice(start, stop), slice(None), *offset)]
        if any(pad):
            out[start:stop] = target[(slice(None), *inner(pad, spatial))]

    parallel.run(images, n, xp, parallel.grain(col[0:1].size))
    return out
