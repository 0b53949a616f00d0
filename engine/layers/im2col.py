"""im2col / col2im over a whole batch with any number of spatial axes, for numpy and cupy.

``im2col`` lays a batch ``x`` of shape (N, C, *spatial) out as columns of shape
(C, *kernel, *out, N): entry [c, *k, *o, n] is x[n, c, o * stride + k * dilation - pad], zero
where that falls in the padding. With the channels and kernel offsets leading, the columns of a
channel group are one contiguous (C/G * prod(kernel), prod(out) * N) matrix, so a convolution of
the whole batch is one GEMM per group. ``col2im`` is its adjoint: it adds every column entry
back onto the pixel it came from.

Both loop over the kernel offsets only (prod(kernel) iterations), each copying one strided slice
of the padded batch: never over pixels or images. The batch is the innermost axis of the padded
copy and of the columns, so each slice moves long contiguous runs (N or more values), which is
what keeps numpy fast here.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from engine import backend

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


def batch_first(a: Any) -> Any:
    """(C, *spatial, N) -> (N, C, *spatial), a view of a contiguous (C, N, *spatial) copy.

    Done as a batch of 2-D transposes and then a view: numpy's one-step permutation copy of this
    kind is two to four times slower (the opposite direction is fast as it is: ``xp.moveaxis``).
    """
    xp = backend.get_array_module(a)
    c, n = a.shape[0], a.shape[-1]
    return (
        xp.ascontiguousarray(a.reshape(c, -1, n).swapaxes(1, 2)).reshape(c, n, *a.shape[1:-1]).swapaxes(0, 1)
    )


def inner(pad: Ints, spatial: Ints) -> tuple[slice, ...]:
    """The slice of a padded (C, *padded, N) array that holds the image itself."""
    return (slice(None), *(slice(p, p + s) for s, p in zip(spatial, pad)))


def im2col(x: Any, kernel: Ints, pad: Ints, stride: Ints, dilation: Ints) -> Any:
    """Columns (C, *kernel, *out, N) of the batch ``x`` (N, C, *spatial)."""
    xp = backend.get_array_module(x)
    n, c, *spatial = x.shape
    out = conv_output_shape(spatial, kernel, pad, stride, dilation)
    padded = xp.zeros((c, *(s + 2 * p for s, p in zip(spatial, pad)), n), x.dtype)
    padded[inner(pad, spatial)] = xp.moveaxis(x, 0, -1)
    col = xp.empty((c, *kernel, *out, n), x.dtype)
    for offset in kernel_offsets(kernel):
        col[(slice(None), *offset)] = padded[(slice(None), *window_slices(offset, out, stride, dilation))]
    return col


def col2im(col: Any, spatial: Ints, kernel: Ints, pad: Ints, stride: Ints, dilation: Ints) -> Any:
    """The batch (N, C, *spatial) whose pixels sum the column entries (C, *kernel, *out, N) read from them."""
    xp = backend.get_array_module(col)
    c, n = col.shape[0], col.shape[-1]
    out = col.shape[1 + len(kernel) : -1]
    padded = xp.zeros((c, *(s + 2 * p for s, p in zip(spatial, pad)), n), col.dtype)
    for offset in kernel_offsets(kernel):
        padded[(slice(None), *window_slices(offset, out, stride, dilation))] += col[(slice(None), *offset)]
    return batch_first(padded[inner(pad, spatial)])
