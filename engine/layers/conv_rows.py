"""Convolutions with stride 1 down the rows, their kernel rows summed by GEMMs over shifted views.

im2col copies each input value kh kw times into the columns. With stride 1 down the rows the copy
can be kw times: columns of (j, c) rows (each kernel column offset j) over a block's R output rows
plus the (kh - 1) dilation rows below them. Kernel row i's columns are then that same array from
row i dilation on, a view (rows (c, j) evenly spaced, positions (r, col, image) contiguous), and

    y = sum over i of W_i cols_i,   W_i (O, kw C) = W[:, :, i, :] (columns (j, c))

kh GEMMs, each adding into y on BLAS itself (engine.cpu_blas), straight into the top where a block
is one image's rows. The weight gradient is the same sum turned round: dW_i += dY cols_i^T (or its
transpose, as engine.layers.conv_cpu chooses), every block adding into one partial per thread.

The columns are copied from the input as it is (no padded copy first): for each offset j, the
rows and columns of the block that fall inside the image, the border around them zeroed.

The sums are the reference's (engine.layers.conv) in another order (per kernel row, then over the
rows): equal up to float rounding. Used for one group, stride 1 down the rows, kernels of more than
one row, at least ``MIN_DEPTH`` rows of columns (C kw: fewer make GEMMs too thin to pay), and
outputs at least ``conv_cpu.BATCH_LAST_WIDTH`` wide, a block being some rows of one image. (Narrow
ones lost, in the ResNet-18-style net's steps on a 2-core EPYC, per layer: 56 x 56 x 64 and 28 x 28
x 128 gained 8-12% on each of forward, weight and data gradient; 14 x 14 x 256 lost up to 14% and
7 x 7 x 512 up to 60% against im2col's batch-last layout, their GEMMs a few hundred positions wide
beside a weight of several MB.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from engine import backend, cpu_blas, parallel

MIN_DEPTH = 32  # C kw below this: conv_cpu's im2col (LeNet's conv1, C = 1; CIFAR's conv1, C = 3)

Block = tuple[int, int, int]  # an image, its output rows r0..r1


def applies(kernel: Any, stride: Any, channels: int, groups: int, out_width: int, narrow: int) -> bool:
    """Whether a convolution takes this path (see the module's text); ``narrow``: the output widths
    below which conv_cpu takes its batch-last layout."""
    return (
        groups == 1
        and stride[0] == 1
        and kernel[0] > 1
        and channels * kernel[1] >= MIN_DEPTH
        and out_width >= narrow
    )


def row_weights(w: Any) -> Any:
    """W (O, C, kh, kw) as (kh, O, kw C), the GEMMs' left operands, in a scratch. (The columns'
    rows are (j, c), not im2col's (c, j): this copy's inner runs are then C values, not kw; on
    512 x 512 x 3 x 3, 0.7 ms against 2.8.)"""
    o, c, kh, kw = w.shape
    rows = backend.scratch("conv_rows_w", (kh, o, kw, c), w.dtype)
    np.copyto(rows, w.transpose(2, 0, 3, 1))
    return rows.reshape(kh, o, kw * c)


class RowShifted:
    """The blocks of a convolution's input as kw-shifted columns over whole rows (the module's
    text): an image's ``rows`` output rows a block, each thread taking a range of images."""

    def __init__(self, a: Any, pad: Any, geometry: Any, block_bytes: int) -> None:
        """a (N, C, H, W); blocks of about ``block_bytes`` of columns."""
        self.a, self.pad, self.geometry = a, tuple(pad), geometry
        c = a.shape[1]
        (oh, ow), (kh, kw), dh = geometry.out, geometry.kernel, geometry.dilation[0]
        self.extra = (kh - 1) * dh
        self.rows = max(1, min(oh, block_bytes // (c * kw * ow * a.itemsize) - self.extra))
        self.size = a.shape[0]

    def units(self, first: int, stop: int) -> Iterator[Block]:
        oh = self.geometry.out[0]
        for image in range(first, stop):
            for r0 in range(0, oh, self.rows):
                yield image, r0, min(r0 + self.rows, oh)

    def columns(self, block: Block) -> Any:
        """The block's (kw, C, R + extra, OW) columns in this thread's scratch."""
        image, r0, r1 = block
        kw, sw, dw, ow = (
            self.geometry.kernel[1],
            self.geometry.stride[1],
            self.geometry.dilation[1],
            self.geometry.out[1],
        )
        source = self.a[image]
        (ph, pw), (c, h, w) = self.pad, source.shape
        rows = r1 - r0 + self.extra
        cols = backend.scratch("conv_rows_cols", (kw, c, rows, ow), source.dtype)
        # rows t of the block read input row r0 + t - ph; inside the image for t0 <= t < t1
        t0, t1 = min(rows, max(0, ph - r0)), max(0, min(rows, h + ph - r0))
        t1 = max(t0, t1)
        cols[:, :, :t0] = 0
        cols[:, :, t1:] = 0
        for j in range(kw):
            # output column q reads input column q sw + j dw - pw; inside for q0 <= q < q1
            shift = j * dw - pw
            q0 = min(ow, max(0, -(shift // sw)))
            q1 = max(q0, min(ow, -(-(w - shift) // sw)))
            cols[j, :, t0:t1, :q0] = 0
            cols[j, :, t0:t1, q1:] = 0
            if q1 > q0 and t1 > t0:
                start = q0 * sw + shift
                np.copyto(
                    cols[j, :, t0:t1, q0:q1],
                    source[:, r0 + t0 - ph : r0 + t1 - ph, start : start + (q1 - q0 - 1) * sw + 1 : sw],
                )
        return cols

    def kernel_row(self, cols: Any, i: int, block: Block) -> Any:
        """Kernel row i's columns (kw C, R OW): a view of the block's columns."""
        image, r0, r1 = block
        kw, c, rows, ow = cols.shape
        item = cols.itemsize
        start = cols.reshape(-1)[i * self.geometry.dilation[0] * ow :]
        return as_strided(start, (kw * c, (r1 - r0) * ow), (rows * ow * item, item))


def block_of(a: Any, block: Block) -> Any:
    """The block's rows of a (N, O, OH, OW) as an (O, R OW) matrix: a view."""
    image, r0, r1 = block
    ow = a.shape[3]
    return a[image].reshape(a.shape[1], -1)[:, r0 * ow : r1 * ow]


def convolve(source: RowShifted, weights: Any, y: Any, bias: Any) -> None:
    """y (N, O, OH, OW) = sum_i W_i cols_i (+ bias), weights (kh, O, C kw), on the pool's threads."""

    def work(first: int, stop: int) -> None:
        for block in source.units(first, stop):
            cols = source.columns(block)
            out = block_of(y, block)
            if bias is not None:
                out[...] = bias.reshape(-1, 1)  # the GEMMs add onto it
            for i in range(len(weights)):
                cpu_blas.gemm(weights[i], source.kernel_row(cols, i, block), out, bias is not None or i > 0)

    parallel.run(work, source.size, np)


def weight_gradient(source: RowShifted, dy: Any, dw: Any, db: Any, transposed: bool, ws: Any) -> None:
    """dw (O, C, kh, kw) += sum_i dY cols_i^T over the batch (and db += dY's sums), on the pool's
    threads, each with its partial sums in ``ws``; ``transposed``: each product made as cols_i dY^T."""
    o, c, kh, kw = dw.shape
    shape = (kh, kw * c, o) if transposed else (kh, o, kw * c)
    parts: dict[int, tuple[Any, Any]] = {}

    def work(first: int, stop: int) -> None:
        total = ws.get(f"rows_dw{first}", shape, dw.dtype, np)
        bias = ws.get(f"rows_db{first}", (o,), dw.dtype, np)
        bias[...] = 0
        add = False
        for block in source.units(first, stop):
            cols = source.columns(block)
            block_dy = block_of(dy, block)
            for i in range(kh):
                row = source.kernel_row(cols, i, block)
                if transposed:
                    cpu_blas.gemm(row, block_dy.T, total[i], add)
                else:
                    cpu_blas.gemm(block_dy, row.T, total[i], add)
            add = True
            if db is not None:
                bias += block_dy.sum(axis=1)
        if not add:
            total[...] = 0
        parts[first] = total, bias

    parallel.run(work, source.size, np)
    summed, bias = parallel.ordered_sums(parts)
    if transposed:
        dw += summed.reshape(kh, kw, c, o).transpose(3, 2, 0, 1)
    else:
        dw += summed.reshape(kh, o, kw, c).transpose(1, 3, 0, 2)
    if db is not None:
        db += bias
