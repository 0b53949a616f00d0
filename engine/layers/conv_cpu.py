"""The CPU's fast 2-D convolution: Caffe's im2col + GEMM, a cache-sized block of columns at a time.

The algorithm and the order of every sum over a column are the reference path's (engine.layers.conv):
columns (G, Kg, M), row (c, kh, kw) as Caffe's, Kg = C / G kh kw. What changes is where the columns
come from and how large the pieces are:
* Columns are made for a block of about ``BLOCK_BYTES`` (from the machine's caches, at least
  ``ROW_POSITIONS`` O/G positions), multiplied while they are still in the core's cache, and
  dropped: forward Y (G, O/G, M) = W (G, O/G, Kg) cols, written by the GEMM into the top where a
  block is one image's rows, else copied back to (N, O, OH, OW) with the bias added in that copy;
  weight gradient dW += dY cols^T (made as its transpose cols dY^T where BLAS runs that faster),
  dY's block gathered into the columns' order. A 1 x 1 kernel with stride 1 makes no columns: an
  image's rows of input are its columns, as they are.
* The copy that makes columns is as fast as the runs it moves are long. On large maps (or strides),
  a block is some images, or some output rows of one, of the zero-padded input (``ImageMajor``):
  runs of OW values. On small maps with stride 1 (CIFAR's 16 x 16, ResNet's 7 x 7), runs of OW
  values are short, so the batch goes a few images at a time, each such group first copied into a
  batch-last layout (C, H', W', images) (``BatchLast``): a column row (c, i, j) of an output row is
  then one run of OW x images values, and the columns' order is (row, column, image).
* The data gradient with stride 1 is itself a convolution: of dY, zero-padded by
  dilation (k - 1) - pad, with the kernel flipped and its in/out channels swapped (each input pixel
  gathers the outputs whose windows read it), made as the forward is, with no scatter. Other strides
  multiply dcols = W^T dY per block of images and add each kernel offset's columns onto the pixels
  they read (Caffe's col2im, in its order of kernel offsets).
* Threads (engine.parallel) take ranges of images (or groups), each with its own scratch and its own
  partial weight gradient, summed in a fixed order at the end.
So the forward sums each column in the reference's order (BLAS's blocking aside); the gradients equal
it up to float rounding (the weight gradient sums the batch by blocks, the stride-1 data gradient
over (O, kh, kw) in one sum where the reference sums over O, then the kernel offsets).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from engine import backend, cpu_cache, parallel
from engine.layers import conv_direct, conv_rows
from engine.layers.conv_shape import ConvShape

# Columns per block: big enough for BLAS's kernels, small enough to stay in a core's L2/L3 between
# the copy that writes them and the GEMM that reads them: from this machine's caches (2 MiB unknown).
BLOCK_BYTES = cpu_cache.machine_block_bytes(2 << 20)
# Run lengths (in values) below which numpy's strided copies pay more per run than per value: not
# cache sizes. Both were swept on the 2-core EPYC, forward + gradients of CIFAR's 16x16 and 8x8 and
# ResNet's 28x28 to 7x7 convs: the width any of 16-28 (0, no batch-last: CIFAR's conv2 +40%), the
# group any of 64-256 columns (32: CIFAR's conv2 +28%; 512: +12%).
BATCH_LAST_WIDTH = 20  # outputs narrower than this (with stride 1) take the batch-last layout
GROUP_COLUMNS = 128  # a batch-last group holds about this many output columns' worth of images
GATHER_MAX_GROWTH = (
    1.3  # the stride-1 data gradient gathers when the input has at most this many more positions
)
DW_TRANSPOSED_POSITIONS = 8  # the weight gradient is made transposed from this many times O/G positions
# Blocks hold at least this many positions per row of the weight (O/G): each GEMM packs the whole
# weight (O/G x Kg) for its block (the weight gradient adds a product that size), so a block of few
# positions beside a large weight (ResNet's 7 x 7 x 512, 14 x 14 x 256) wastes most of its time there.
ROW_POSITIONS = 4
MIN_GROUP_CHANNELS = 4  # fewer input channels per group (depthwise): tiny GEMMs, the reference path

Block = tuple[int, int, int, int]  # images a..b, output rows r0..r1


def applies(xp: Any, num_spatial: int, channels: int, group: int) -> bool:
    """Whether this path runs a convolution: numpy, 2-D, and not (nearly) depthwise."""
    return xp is np and num_spatial == 2 and (group == 1 or channels // group >= MIN_GROUP_CHANNELS)


class Geometry:
    """A convolution's windows: kernel, stride, dilation, and the output's spatial size."""

    def __init__(self, kernel: Any, stride: Any, dilation: Any, out: Any, groups: int) -> None:
        self.kernel, self.stride, self.dilation, self.out, self.groups = kernel, stride, dilation, out, groups

    def window_strides(self, s_h: int, s_w: int) -> tuple[int, int, int, int]:
        """Byte strides of (kh, kw, output row, output column) over an input with row/column strides."""
        (dh, dw), (sh, sw) = self.dilation, self.stride
        return dh * s_h, dw * s_w, sh * s_h, sw * s_w

    def pointwise(self) -> bool:
        """A 1 x 1 kernel with stride 1: an image's columns are its rows of input as they are."""
        return tuple(self.kernel) == (1, 1) and tuple(self.stride) == (1, 1)

    def positions(self, block: Block) -> int:
        a, b, r0, r1 = block
        return (b - a) * (r1 - r0) * self.out[1]


class Blocks:
    """Blocks (a, b, r0, r1) of a conv output: images a..b, output rows r0..r1, whose columns
    (``position_bytes`` per output position) take about BLOCK_BYTES; ``most``: the most positions of one."""

    def __init__(
        self, out: tuple[int, ...], position_bytes: int, block_bytes: int = 0, one_image: bool = False
    ) -> None:
        self.out = out
        block_bytes = block_bytes or BLOCK_BYTES
        per_image = out[0] * out[1] * position_bytes
        if one_image:
            self.images, self.rows = 1, out[0]
        elif per_image <= block_bytes:
            self.images, self.rows = max(1, block_bytes // per_image), out[0]
        else:
            self.images, self.rows = 1, max(1, min(out[0], block_bytes // (out[1] * position_bytes)))
        self.most = self.images * self.rows * out[1]

    def of(self, first: int, stop: int) -> Iterator[Block]:
        for a in range(first, stop, self.images):
            b = min(a + self.images, stop)
            for r0 in range(0, self.out[0], self.rows):
                yield a, b, r0, min(r0 + self.rows, self.out[0])


def zero_border(a: Any, axis: int, pad: tuple[int, ...]) -> None:
    """Zeroes the pad-wide border of axes ``axis`` and ``axis + 1`` of a (a shared scratch: another
    layer may have written there; the border alone, not the whole array, which is written next)."""
    for k, p in enumerate(pad):
        if p:
            edge = [slice(None)] * a.ndim
            edge[axis + k] = slice(0, p)
            a[tuple(edge)] = 0
            edge[axis + k] = slice(a.shape[axis + k] - p, None)
            a[tuple(edge)] = 0


def padded_copy(a: Any, pad: tuple[int, ...]) -> Any:
    """a (N, C, H, W), or a copy of it in a zero-bordered (N, C, H + 2 pad_h, W + 2 pad_w) scratch."""
    if not any(pad):
        return a
    n, c, h, w = a.shape
    padded = backend.scratch("conv_padded", (n, c, h + 2 * pad[0], w + 2 * pad[1]), a.dtype)
    zero_border(padded, 2, pad)
    padded[:, :, pad[0] : pad[0] + h, pad[1] : pad[1] + w] = a
    return padded


def batch_inner(a: Any, block: Block, scratch: Any, groups: int) -> Any:
    """Images a..b, rows r0..r1 of a (N, O, OH, OW) array as a (G, O/G, M) matrix (a view for one image)."""
    first, stop, r0, r1 = block
    part = a[first:stop, :, r0:r1]
    if stop - first == 1:
        return part[0].reshape(groups, a.shape[1] // groups, -1)
    m = part.size // a.shape[1]
    target = scratch.reshape(-1)[: part.size].reshape(a.shape[1], stop - first, -1)
    np.copyto(target, part.reshape(stop - first, a.shape[1], -1).transpose(1, 0, 2))
    return target.reshape(groups, -1, m)


class ImageMajor:
    """Columns of blocks of images (or output rows of one) of the whole padded input, column order
    (image, row, column). ``size``: the range threads split (images)."""

    def __init__(
        self, a: Any, pad: tuple[int, ...], geometry: Geometry, position_bytes: int, block_bytes: int = 0
    ):
        self.padded, self.geometry = padded_copy(a, pad), geometry
        # 1 x 1, stride 1: blocks of one whole image, multiplied as they are (no columns made)
        self.blocks = Blocks(geometry.out, position_bytes, block_bytes, geometry.pointwise())
        self.most, self.size = self.blocks.most, a.shape[0]

    def units(self, first: int, stop: int, tag: int) -> Iterator[tuple[Block, Any]]:
        for block in self.blocks.of(first, stop):
            yield block, self.padded

    def target(self, y: Any, block: Block) -> Any:
        """The block of y (N, O, OH, OW) as the (G, O/G, M) matrix a GEMM can write (a view: one
        image's rows are columns in order), or None (several images: the product is scattered)."""
        a, b, r0, r1 = block
        if b - a != 1:
            return None
        ow = y.shape[3]
        return y[a].reshape(self.geometry.groups, y.shape[1] // self.geometry.groups, -1)[
            ..., r0 * ow : r1 * ow
        ]

    def columns(self, block: Block, source: Any, scratch: Any) -> Any:
        """(G, Kg, M) columns of the block in ``scratch``, row (c, kh, kw); for a 1 x 1 kernel with
        stride 1 and one image, the input's rows as they are (no copy)."""
        a, b, r0, r1 = block
        (kh, kw), ow, c = self.geometry.kernel, self.geometry.out[1], source.shape[1]
        if self.geometry.pointwise() and b - a == 1 and ow == source.shape[3]:
            return source[a, :, r0:r1].reshape(self.geometry.groups, c // self.geometry.groups, -1)
        s_n, s_c, s_h, s_w = source.strides
        i, j, r, col = self.geometry.window_strides(s_h, s_w)
        shape = (c, kh, kw, b - a, r1 - r0, ow)
        m = (b - a) * (r1 - r0) * ow
        cols = scratch[: c * kh * kw * m].reshape(shape)
        np.copyto(
            cols, as_strided(source[a:b, :, r0 * self.geometry.stride[0] :], shape, (s_c, i, j, s_n, r, col))
        )
        return cols.reshape(self.geometry.groups, -1, m)

    def gather(self, a: Any, block: Block, scratch: Any) -> Any:
        """The block of a (N, O, OH, OW) array as (G, O/G, M) in the columns' order."""
        return batch_inner(a, block, scratch, self.geometry.groups)

    def scatter(self, m: Any, y: Any, block: Block, shift: Any) -> None:
        """A (G, O/G, M) product into its block of y (N, O, OH, OW) (+ shift (O, 1, 1))."""
        a, b, r0, r1 = block
        target = y[a:b, :, r0:r1]
        n, o = target.shape[:2]
        source = m.reshape(o, n, *target.shape[2:]).transpose(1, 0, 2, 3)
        if shift is None:
            np.copyto(target, source)
        else:
            np.add(source, shift, out=target)


def group_plan(
    n: int, out: tuple[int, ...], position_bytes: int, block_bytes: int = 0
) -> tuple[int, int, int]:
    """Batch-last groups of a batch of n: (groups, the most images in one, output rows per block)."""
    (oh, ow), threads = out, parallel.threads()
    # groups of about GROUP_COLUMNS // ow images, as many as a multiple of the threads
    groups = max(1, min(n, threads * -(-n // (threads * max(1, -(-GROUP_COLUMNS // ow))))))
    images = max(1, -(-n // groups))  # groups split the batch evenly
    return groups, images, max(1, min(oh, (block_bytes or BLOCK_BYTES) // (ow * images * position_bytes)))


class BatchLast:
    """Columns of output rows of groups of a few images, each group copied batch-last into
    (C, H', W', images) first; column order (row, column, image). ``size``: the range threads
    split (groups)."""

    def __init__(
        self, a: Any, pad: tuple[int, ...], geometry: Geometry, position_bytes: int, block_bytes: int = 0
    ):
        self.a, self.pad, self.geometry = a, pad, geometry
        n, ow = a.shape[0], geometry.out[1]
        self.groups, self.images, self.rows = group_plan(n, geometry.out, position_bytes, block_bytes)
        self.most, self.size = self.rows * ow * self.images, self.groups if n else 0

    def group(self, first: int, stop: int, tag: int) -> Any:
        """Images first..stop batch-last in this thread's zero-bordered scratch (the copy leaves the
        border alone)."""
        (ph, pw), (c, h, w) = self.pad, self.a.shape[1:]
        shape = (c, h + 2 * ph, w + 2 * pw, stop - first)
        scratch = backend.scratch("conv_group", shape, self.a.dtype)
        zero_border(scratch, 1, self.pad)
        np.copyto(scratch[:, ph : ph + h, pw : pw + w], self.a[first:stop].transpose(1, 2, 3, 0))
        return scratch

    def images_of(self, group: int) -> tuple[int, int]:
        n = self.a.shape[0]
        return n * group // self.groups, n * (group + 1) // self.groups

    def rows_of(self) -> Iterator[tuple[int, int]]:
        oh = self.geometry.out[0]
        for r0 in range(0, oh, self.rows):
            yield r0, min(r0 + self.rows, oh)

    def units(self, first: int, stop: int, tag: int) -> Iterator[tuple[Block, Any]]:
        for group in range(first, stop):
            a, b = self.images_of(group)
            source = self.group(a, b, tag)
            for r0, r1 in self.rows_of():
                yield (a, b, r0, r1), source

    def frame(self, first: int, stop: int, tag: int) -> Any:
        """A zeroed batch-last padded frame (C, H', W', images) for images first..stop of ``a``'s shape."""
        (ph, pw), (c, h, w) = self.pad, self.a.shape[1:]
        shape = (c, h + 2 * ph, w + 2 * pw, stop - first)
        frame = backend.scratch("conv_frame", shape, self.a.dtype)
        frame[...] = 0
        return frame

    def add_columns(self, cols: Any, block: Block, frame: Any) -> None:
        """Caffe's col2im for one block: each kernel offset's columns (c, i, j) added onto the frame
        pixels they were read from, offsets in Caffe's order."""
        a, b, r0, r1 = block
        (kh, kw), (sh, sw), (dh, dw) = self.geometry.kernel, self.geometry.stride, self.geometry.dilation
        ow, c = self.geometry.out[1], frame.shape[0]
        s_c, s_h, s_w, s_n = frame.strides
        offsets = cols.reshape(c, kh, kw, r1 - r0, ow, b - a)
        shape, strides = (c, r1 - r0, ow, b - a), (s_c, sh * s_h, sw * s_w, s_n)
        for i in range(kh):
            for j in range(kw):
                pixels = as_strided(frame[:, r0 * sh + i * dh :, j * dw :], shape, strides)
                pixels += offsets[:, i, j]

    def unframe(self, frame: Any, first: int, stop: int, out: Any) -> None:
        """The frame's image pixels into images first..stop of out (N, C, H, W)."""
        (ph, pw), (h, w) = self.pad, out.shape[2:]
        np.copyto(out[first:stop], frame[:, ph : ph + h, pw : pw + w].transpose(3, 0, 1, 2))

    def target(self, y: Any, block: Block) -> None:
        """None: batch-last products are always scattered (their columns' order is not y's)."""
        return None

    def columns(self, block: Block, source: Any, scratch: Any) -> Any:
        """(G, Kg, M) columns of the block in ``scratch``, row (c, kh, kw)."""
        a, b, r0, r1 = block
        (kh, kw), ow, c = self.geometry.kernel, self.geometry.out[1], source.shape[0]
        s_c, s_h, s_w, s_n = source.strides
        i, j, r, col = self.geometry.window_strides(s_h, s_w)
        shape = (c, kh, kw, r1 - r0, ow, b - a)
        m = (r1 - r0) * ow * (b - a)
        cols = scratch[: c * kh * kw * m].reshape(shape)
        np.copyto(
            cols, as_strided(source[:, r0 * self.geometry.stride[0] :], shape, (s_c, i, j, r, col, s_n))
        )
        return cols.reshape(self.geometry.groups, -1, m)

    def gather(self, a: Any, block: Block, scratch: Any) -> Any:
        """The block of a (N, O, OH, OW) array as (G, O/G, M) in the columns' order."""
        first, stop, r0, r1 = block
        o = a.shape[1]
        target = scratch[: o * (r1 - r0) * a.shape[3] * (stop - first)].reshape(
            o, r1 - r0, a.shape[3], stop - first
        )
        np.copyto(target, a[first:stop, :, r0:r1].transpose(1, 2, 3, 0))
        return target.reshape(self.geometry.groups, o // self.geometry.groups, -1)

    def scatter(self, m: Any, y: Any, block: Block, shift: Any) -> None:
        """A (G, O/G, M) product into its block of y (N, O, OH, OW) (+ shift (O, 1, 1))."""
        a, b, r0, r1 = block
        result = m.reshape(y.shape[1], r1 - r0, y.shape[3], b - a).transpose(3, 0, 1, 2)
        if shift is None:
            np.copyto(y[a:b, :, r0:r1], result)
        else:
            np.add(result, shift, out=y[a:b, :, r0:r1])


def columns_block_bytes(rows: int, position_bytes: int) -> int:
    """Bytes of columns per block for a weight of ``rows`` rows per group (O/G): BLOCK_BYTES, or
    ROW_POSITIONS positions per row where that is more."""
    return max(BLOCK_BYTES, ROW_POSITIONS * rows * position_bytes)


def takes_batch_last(geometry: Geometry) -> bool:
    """Small stride-1 outputs: their runs of OW values are short, batch-last's OW x images are not."""
    return geometry.stride[1] == 1 and geometry.out[1] < BATCH_LAST_WIDTH and not geometry.pointwise()


def source_for(
    a: Any, pad: tuple[int, ...], geometry: Geometry, position_bytes: int, block_bytes: int = 0
) -> Any:
    """The layout whose columns copy the longer runs for this geometry (see the module's text);
    blocks of about ``block_bytes`` of columns (0: BLOCK_BYTES)."""
    kind = BatchLast if takes_batch_last(geometry) else ImageMajor
    return kind(a, pad, geometry, position_bytes, block_bytes)


def convolve(x: Any, pad: Any, w: Any, y: Any, geometry: Geometry, bias: Any) -> None:
    """y (N, O, OH, OW) = W (G, O/G, Kg) cols(x padded) (+ bias), a block at a time, on the pool's threads."""
    g, og, kg = w.shape
    position_bytes = g * kg * x.itemsize
    source = source_for(x, pad, geometry, position_bytes, columns_block_bytes(og, position_bytes))
    shift = None if bias is None else bias.reshape(-1, 1, 1)

    def work(first: int, stop: int) -> None:
        col = backend.scratch("conv_col", (g * kg * source.most,), x.dtype)
        product = backend.scratch("conv_product", (g * og * source.most,), x.dtype)
        for block, part in source.units(first, stop, first):
            m = geometry.positions(block)
            direct = source.target(y, block)
            out = product[: g * og * m].reshape(g, og, m) if direct is None else direct
            np.matmul(w, source.columns(block, part, col), out=out)
            if direct is None:
                source.scatter(out, y, block, shift)
            elif shift is not None:
                y[block[0], :, block[2] : block[3]] += shift

    parallel.run(work, source.size, np)


class CpuConv:
    """One convolution geometry on the CPU, in the convolution view (conv input -> conv output);
    ``conv_in``/``conv_out``: spatial sizes (the conv input's with any far padding)."""

    def __init__(self, shape: ConvShape) -> None:
        channels, num_output, group, kernel, stride, pad, dilation, conv_in, conv_out = shape
        self.c, self.o, self.g, self.pad, self.conv_in = channels, num_output, group, pad, conv_in
        self.arguments = shape
        self.workspace = backend.Workspace()
        self.windows = Geometry(kernel, stride, dilation, conv_out, group)
        # The stride-1 data gradient as a convolution of dY needs a padding of extent - 1 - pad >= 0.
        self.flip_pad = tuple(d * (k - 1) - p for k, p, d in zip(kernel, pad, dilation))
        # It multiplies over the padded dY, so it pays only where the conv input is not much larger
        # than the output (LeNet's conv2, 12 x 12 -> 8 x 8, is 2.25x cheaper as a scatter).
        larger = (conv_in[0] * conv_in[1]) / max(1, conv_out[0] * conv_out[1])
        self.gather = all(s == 1 for s in stride) and min(self.flip_pad) >= 0 and larger <= GATHER_MAX_GROWTH
        self.flipped = Geometry(kernel, (1, 1), dilation, conv_in, group)
        # Stride 1 down the rows: kernel rows as shifted views (engine.layers.conv_rows)
        self.rows = conv_rows.applies(kernel, stride, channels, group, conv_out[1], BATCH_LAST_WIDTH)
        self.flipped_rows = self.gather and conv_rows.applies(
            kernel, (1, 1), num_output, group, conv_in[1], BATCH_LAST_WIDTH
        )
        # float32 with the compiled kernels: the direct convolution (engine.layers.conv_direct) first
        self.direct = None
        if conv_direct.applies(group, num_output, kernel):
            self.direct = conv_direct.DirectConv(shape)

    def row_source(self, a: Any, pad: tuple[int, ...], geometry: Geometry, rows: int) -> conv_rows.RowShifted:
        """conv_rows' blocks of a (N, C, H, W), sized as im2col's for a weight of ``rows`` rows."""
        position_bytes = a.shape[1] * geometry.kernel[1] * a.itemsize
        return conv_rows.RowShifted(a, pad, geometry, columns_block_bytes(rows, position_bytes))

    def weights(self, w: Any) -> Any:
        return w.reshape(self.g, self.o // self.g, -1)

    def scatter_adds(self, n: int, itemsize: int) -> int:
        """Values in each of the kh kw adds of a batch-last scatter group for a batch of n (0: the
        data gradient gathers, runs direct, or scatters image-major)."""
        direct = itemsize == 4 and self.direct is not None and self.direct.takes_data_gradient
        if self.gather or direct or not takes_batch_last(self.windows):
            return 0
        kernel = self.windows.kernel[0] * self.windows.kernel[1]
        _, images, rows = group_plan(n, self.windows.out, self.c * kernel * itemsize)
        return self.c * rows * self.windows.out[1] * images

    def small_scatter(self, n: int, itemsize: int) -> bool:
        """A batch-last scatter data gradient whose adds are too small to split over threads."""
        return 0 < self.scatter_adds(n, itemsize) < parallel.MIN_SLICE

    def forward(self, x: Any, w: Any, y: Any, bias: Any = None) -> None:
        """y (N, O, OH, OW) = conv(x (N, C, H, W)) (+ bias)."""
        if self.direct is not None and self.direct.forward(x, w, y, bias):
            return
        if self.rows:
            weights = conv_rows.row_weights(w.reshape(self.o, self.c, *self.windows.kernel))
            conv_rows.convolve(self.row_source(x, self.pad, self.windows, self.o), weights, y, bias)
            return
        convolve(x, self.pad, self.weights(w), y, self.windows, bias)

    def weight_gradient(self, x: Any, dy: Any, dw: Any, db: Any = None) -> None:
        """dw += dY cols(x)^T, summed over the batch (and db += dY summed over images and positions,
        from the same blocks of dY while they are in cache)."""
        if self.direct is not None and self.direct.weight_gradient(x, dy, dw, db):
            return
        ws, g, og = self.workspace, self.g, self.o // self.g
        kg = dw[0].size
        position_bytes = g * kg * x.itemsize
        parts: dict[int, tuple[Any, Any]] = {}
        # dW^T (G, Kg, O/G) = cols dY^T is a shape BLAS runs faster than dY cols^T where O/G is small
        # (3x3 convs, a core: O = 64, 212 against 155 GFLOP/s; CIFAR's O = 32, 191 against 109; O =
        # 512, the same), but it ends with a transposed add of dW, as slow as a GEMM over ~600
        # positions (numpy's transposes are not blocked): taken where the batch has 8 O/G positions.
        transposed = dy[:, 0].size >= DW_TRANSPOSED_POSITIONS * og
        if self.rows:
            rows = self.row_source(x, self.pad, self.windows, og)
            weight_shape = (self.o, self.c, *self.windows.kernel)
            conv_rows.weight_gradient(rows, dy, dw.reshape(weight_shape), db, transposed, ws)
            return
        block_bytes = columns_block_bytes(og, position_bytes)
        source = source_for(x, self.pad, self.windows, position_bytes, block_bytes)
        shape = (g, kg, og) if transposed else (g, og, kg)

        def work(first: int, stop: int) -> None:
            col = backend.scratch("conv_col", (g * kg * source.most,), x.dtype)
            grad = backend.scratch("conv_product", (self.o * source.most,), x.dtype)
            total = ws.get(f"dw{first}", shape, x.dtype, np)
            product = ws.get(f"dw_part{first}", shape, x.dtype, np)
            bias = ws.get(f"db{first}", (self.o,), x.dtype, np)
            bias[...] = 0
            empty = True
            for block, part in source.units(first, stop, first):
                cols = source.columns(block, part, col)
                block_dy = source.gather(dy, block, grad)
                out = total if empty else product  # the first block's product is the sum so far
                if transposed:
                    np.matmul(cols, block_dy.transpose(0, 2, 1), out=out)
                else:
                    np.matmul(block_dy, cols.transpose(0, 2, 1), out=out)
                if not empty:
                    total += product
                empty = False
                if db is not None:
                    bias += block_dy.reshape(self.o, -1).sum(axis=1)
            if empty:
                total[...] = 0
            parts[first] = total, bias

        parallel.run(work, source.size, np)
        summed, bias = parallel.ordered_sums(parts)
        dw += (summed.transpose(0, 2, 1) if transposed else summed).reshape(dw.shape)
        if db is not None:
            db += bias

    def data_gradient(self, dy: Any, w: Any, dx: Any) -> None:
        """dx (N, C, H, W) = the data gradient for dy (N, O, OH, OW)."""
        # (a convolution of the padded dY, even where that pads much: the kernels skip the kernel rows
        # that read only padding, so LeNet's conv2, 12 x 12 from 8 x 8, costs 1.5x its forward, not
        # 2.25x: 1.1 ms against 2.9 for the scatter)
        if self.direct is not None and self.direct.data_gradient(dy, w, dx):
            return
        if not self.gather:
            self.scatter_data_gradient(dy, w, dx)
            return
        g, (kh, kw) = self.g, self.windows.kernel
        if self.flipped_rows:
            # W' [c, o, i, j] = W[o, c, kh - 1 - i, kw - 1 - j]: a convolution of dY, C outputs
            flipped4 = w.reshape(self.o, self.c, kh, kw).transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
            weights = conv_rows.row_weights(flipped4)
            source = self.row_source(dy, self.flip_pad, self.flipped, self.c)
            conv_rows.convolve(source, weights, dx, None)
            return
        # W' (G, C/G, O/G kh kw): W' [g, c, (o, i, j)] = W[g O/G + o, c, kh - 1 - i, kw - 1 - j]
        # (kh - 1 - i) kw + kw - 1 - j = kh kw - 1 - (i kw + j): one reversed axis, copied as 3-D
        # (numpy's 5-D copy of 512 x 512 x 3 x 3 took 3.1 ms, this 1.0)
        parts = w.reshape(g, self.o // g, self.c // g, kh * kw)[..., ::-1].transpose(0, 2, 1, 3)
        flipped = backend.scratch("conv_flipped", (g, self.c // g, self.o // g, kh * kw), w.dtype)
        for k in range(g):
            np.copyto(flipped[k], parts[k])
        flipped = flipped.reshape(g, self.c // g, -1)
        convolve(dy, self.flip_pad, flipped, dx, self.flipped, None)

    def scatter_data_gradient(self, dy: Any, w: Any, dx: Any) -> None:
        """dcols = W^T dY a block at a time, each kernel offset's columns added onto its pixels."""
        g, n = self.g, dy.shape[0]
        (kh, kw), (sh, sw), (dh, dw_), (_, ow) = (
            self.windows.kernel,
            self.windows.stride,
            self.windows.dilation,
            self.windows.out,
        )
        wt = self.weights(w).transpose(0, 2, 1)  # (G, Kg, O/G)
        kg = wt.shape[1]
        if takes_batch_last(self.windows):
            target = BatchLast(dx, self.pad, self.windows, g * kg * dy.itemsize)
            self.batch_last_scatter(dy, wt, dx, target)
            return
        full = (n, self.c, *(i + 2 * p for i, p in zip(self.conv_in, self.pad)))
        padded = backend.scratch("conv_dx_padded", full, dx.dtype) if any(self.pad) else dx
        position_bytes = g * kg * dy.itemsize
        blocks = Blocks(self.windows.out, position_bytes, columns_block_bytes(self.o // g, position_bytes))
        s_n, s_c, s_h, s_w = padded.strides

        def images(first: int, stop: int) -> None:
            col = backend.scratch("conv_col", (g, kg, blocks.most), dy.dtype)
            grad = backend.scratch("conv_product", (self.o * blocks.most,), dy.dtype)
            padded[first:stop] = 0
            for block in blocks.of(first, stop):
                a, b, r0, r1 = block
                m = self.windows.positions(block)
                cols = col.reshape(-1)[: g * kg * m].reshape(g, kg, m)
                np.matmul(wt, batch_inner(dy, block, grad, g), out=cols)
                offsets = cols.reshape(self.c, kh, kw, b - a, r1 - r0, ow)
                for i in range(kh):
                    for j in range(kw):
                        base = padded[a:b, :, r0 * sh + i * dh :, j * dw_ :]
                        shape = (b - a, self.c, r1 - r0, ow)
                        pixels = as_strided(base, shape, (s_n, s_c, sh * s_h, sw * s_w))
                        pixels += offsets[:, i, j].transpose(1, 0, 2, 3)
            if padded is not dx:
                (ph, pw), (h, w_) = self.pad, self.conv_in
                dx[first:stop] = padded[first:stop, :, ph : ph + h, pw : pw + w_]

        parallel.run(images, n, np)

    def batch_last_scatter(self, dy: Any, wt: Any, dx: Any, target: BatchLast) -> None:
        """The scatter data gradient a batch-last group at a time: dcols = W^T dY for a few output
        rows, added onto the group's padded frame (long runs), the frame's image then into dx."""
        g, kg = self.g, wt.shape[1]

        def work(first: int, stop: int) -> None:
            col = backend.scratch("conv_col", (g * kg * target.most,), dy.dtype)
            grad = backend.scratch("conv_product", (self.o * target.most,), dy.dtype)
            for group in range(first, stop):
                a, b = target.images_of(group)
                frame = target.frame(a, b, first)
                for r0, r1 in target.rows_of():
                    block = (a, b, r0, r1)
                    m = self.windows.positions(block)
                    cols = col[: g * kg * m].reshape(g, kg, m)
                    np.matmul(wt, target.gather(dy, block, grad), out=cols)
                    target.add_columns(cols, block, frame)
                target.unframe(frame, a, b, dx)

        # Each group makes kh kw small adds; split over threads only where each is worth a slice (on
        # LeNet's conv2, 20k values an add, two threads passing the GIL to and fro took 1.6x longer).
        small = self.small_scatter(dy.shape[0], dy.itemsize)
        parallel.run(work, target.size, np, target.size if small else 1)
