"""The CPU's fast 2-D convolution: Caffe's im2col + GEMM, over small groups of images laid out batch-last.

The algorithm and the order of every sum over a column are the reference path's (engine.layers.conv):
columns (G, Kg, M), row (c, kh, kw) as Caffe's, Kg = C / G kh kw. What changes is where the columns
come from and how large the pieces are:
* The batch goes ``images`` at a time (a handful: about 128 output columns' worth), and each such
  group of the (zero-padded) input is first copied into a batch-last layout (C, H', W', images). A
  column row (c, i, j) of an output row then reads, for stride 1, one contiguous run of
  OW x images values (OW runs of ``images`` values for other strides) instead of images runs of OW:
  the copy that makes the columns moves long runs, which is what its speed depends on. Its column
  order is (output row, output column, image).
* Columns are made for a few output rows of a group at a time (about ``BLOCK_BYTES``), multiplied
  while they are still in the core's cache, and dropped: forward Y (G, O/G, M) = W (G, O/G, Kg) cols,
  copied back to (N, O, OH, OW) with the bias added in that copy; weight gradient
  dW += dY cols^T, dY's block gathered into the same column order.
* The data gradient with stride 1 is itself a convolution: of dY, zero-padded by
  dilation (k - 1) - pad, with the kernel flipped and its in/out channels swapped (each input pixel
  gathers the outputs whose windows read it), made as the forward is, with no scatter. Other strides
  multiply dcols = W^T dY per block of images and add each kernel offset's columns onto the pixels
  they read (Caffe's col2im, in its order of kernel offsets).
* Threads (engine.parallel) take ranges of groups, each with its own scratch and its own partial
  weight gradient, summed in a fixed order at the end.
So the forward sums each column in the reference's order (BLAS's blocking aside); the gradients equal
it up to float rounding (the weight gradient sums the batch by blocks, the stride-1 data gradient
over (O, kh, kw) in one sum where the reference sums over O, then the kernel offsets).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from engine import backend, parallel

# Columns per block: big enough for BLAS's kernels, small enough to stay in a core's L2/L3 between
# the copy that writes them and the GEMM that reads them (CIFAR-10 quick's conv2 ran best near 2 MiB).
BLOCK_BYTES = 2 << 20
GROUP_COLUMNS = 128  # a group holds about this many output columns' worth of images (OW x images)
GATHER_MAX_GROWTH = (
    1.3  # the stride-1 data gradient gathers when the input has at most this many more positions
)
MIN_GROUP_CHANNELS = 4  # fewer input channels per group (depthwise): tiny GEMMs, the reference path


def applies(xp: Any, num_spatial: int, channels: int, group: int) -> bool:
    """Whether this path runs a convolution: numpy, 2-D, and not (nearly) depthwise."""
    return xp is np and num_spatial == 2 and (group == 1 or channels // group >= MIN_GROUP_CHANNELS)


class Blocks:
    """Blocks (a, b, r0, r1) of a conv output: images a..b, output rows r0..r1, whose columns
    (``position_bytes`` per output position) take about BLOCK_BYTES; ``most``: the most positions of one."""

    def __init__(self, out: tuple[int, ...], position_bytes: int) -> None:
        self.out = out
        per_image = out[0] * out[1] * position_bytes
        if per_image <= BLOCK_BYTES:
            self.images, self.rows = max(1, BLOCK_BYTES // per_image), out[0]
        else:
            self.images, self.rows = 1, max(1, min(out[0], BLOCK_BYTES // (out[1] * position_bytes)))
        self.most = self.images * self.rows * out[1]

    def of(self, first: int, stop: int) -> Iterator[tuple[int, int, int, int]]:
        for a in range(first, stop, self.images):
            b = min(a + self.images, stop)
            for r0 in range(0, self.out[0], self.rows):
                yield a, b, r0, min(r0 + self.rows, self.out[0])


class Groups:
    """Groups of ``images`` images (a, b) and, in each, blocks of output rows (r0, r1) whose columns
    (``position_bytes`` per output position) take about BLOCK_BYTES; ``most``: the most positions of one."""

    def __init__(self, num: int, out: tuple[int, ...], position_bytes: int) -> None:
        self.num, self.out = num, out
        self.images = max(1, min(num, -(-GROUP_COLUMNS // out[1])))
        row = out[1] * self.images * position_bytes
        self.rows = max(1, min(out[0], BLOCK_BYTES // row))
        self.most = self.rows * out[1] * self.images

    def count(self) -> int:
        return -(-self.num // self.images)

    def images_of(self, group: int) -> tuple[int, int]:
        a = group * self.images
        return a, min(a + self.images, self.num)

    def rows_of(self) -> Iterator[tuple[int, int]]:
        for r0 in range(0, self.out[0], self.rows):
            yield r0, min(r0 + self.rows, self.out[0])


def batch_last(a: Any, first: int, stop: int, pad: tuple[int, ...], scratch: Any) -> Any:
    """Images first..stop of a (N, C, H, W) as (C, H + 2 pad_h, W + 2 pad_w, images) in ``scratch``,
    whose zero border (made once) the copy leaves alone."""
    (ph, pw), (h, w) = pad, a.shape[2:]
    np.copyto(scratch[:, ph : ph + h, pw : pw + w], a[first:stop].transpose(1, 2, 3, 0))
    return scratch


class Geometry:
    """A convolution's windows: kernel, stride, dilation, and the output's spatial size."""

    def __init__(self, kernel: Any, stride: Any, dilation: Any, out: Any, groups: int) -> None:
        self.kernel, self.stride, self.dilation, self.out, self.groups = kernel, stride, dilation, out, groups

    def columns(self, source: Any, r0: int, r1: int, scratch: Any) -> Any:
        """The columns of output rows r0..r1 of a batch-last padded input (C, H', W', images), copied
        into ``scratch``: (G, Kg, M), row (c, kh, kw), column (row, column, image)."""
        (kh, kw), (sh, sw), (dh, dw), ow = self.kernel, self.stride, self.dilation, self.out[1]
        c, images = source.shape[0], source.shape[3]
        s_c, s_h, s_w, s_n = source.strides
        shape = (c, kh, kw, r1 - r0, ow, images)
        strides = (s_c, dh * s_h, dw * s_w, sh * s_h, sw * s_w, s_n)
        m = (r1 - r0) * ow * images
        cols = scratch.reshape(-1)[: c * kh * kw * m].reshape(shape)
        np.copyto(cols, as_strided(source[:, r0 * sh :], shape, strides))
        return cols.reshape(self.groups, -1, m)

    def positions(self, block: tuple[int, int, int, int]) -> int:
        a, b, r0, r1 = block
        return (b - a) * (r1 - r0) * self.out[1]


class Layout:
    """The batch-last scratch of one input: ``get(first, stop, tag)`` its group first..stop, padded."""

    def __init__(self, a: Any, pad: tuple[int, ...], ws: Any, name: str) -> None:
        self.a, self.pad, self.ws, self.name = a, pad, ws, name
        n, c, h, w = a.shape
        self.frame = (c, h + 2 * pad[0], w + 2 * pad[1])

    def get(self, first: int, stop: int, tag: int) -> Any:
        shape = (*self.frame, stop - first)
        scratch = self.ws.get(f"{self.name}{tag}_{stop - first}", shape, self.a.dtype, np, zeros=True)
        return batch_last(self.a, first, stop, self.pad, scratch)


def batch_inner(a: Any, block: tuple[int, int, int, int], scratch: Any, groups: int) -> Any:
    """Images a..b, rows r0..r1 of a (N, O, OH, OW) array as a (G, O/G, M) matrix (a view for one image)."""
    first, stop, r0, r1 = block
    part = a[first:stop, :, r0:r1]
    if stop - first == 1:
        return part[0].reshape(groups, a.shape[1] // groups, -1)
    m = part.size // a.shape[1]
    target = scratch.reshape(-1)[: part.size].reshape(a.shape[1], stop - first, -1)
    np.copyto(target, part.reshape(stop - first, a.shape[1], -1).transpose(1, 0, 2))
    return target.reshape(groups, -1, m)


def convolve(source: Layout, w: Any, y: Any, geometry: Geometry, bias: Any, ws: Any, tag: str) -> None:
    """y (N, O, OH, OW) = W (G, O/G, Kg) cols(source) (+ bias), a block at a time, on the pool's threads."""
    g, og, kg = w.shape
    groups = Groups(y.shape[0], geometry.out, g * kg * y.itemsize)
    ow = geometry.out[1]

    def images(first: int, stop: int) -> None:
        col = ws.get(f"{tag}col{first}", (g * kg * groups.most,), y.dtype, np)
        product = ws.get(f"{tag}y{first}", (g * og * groups.most,), y.dtype, np)
        for group in range(first, stop):
            a, b = groups.images_of(group)
            padded = source.get(a, b, first)
            for r0, r1 in groups.rows_of():
                m = (r1 - r0) * ow * (b - a)
                out = product[: g * og * m].reshape(g, og, m)
                np.matmul(w, geometry.columns(padded, r0, r1, col), out=out)
                result = out.reshape(g * og, r1 - r0, ow, b - a).transpose(3, 0, 1, 2)
                if bias is None:
                    np.copyto(y[a:b, :, r0:r1], result)
                else:
                    np.add(result, bias.reshape(-1, 1, 1), out=y[a:b, :, r0:r1])

    parallel.run(images, groups.count(), np)


class CpuConv:
    """One convolution geometry on the CPU, in the convolution view (conv input -> conv output);
    ``conv_in``/``conv_out``: spatial sizes (the conv input's with any far padding)."""

    def __init__(
        self,
        channels: int,
        num_output: int,
        group: int,
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        pad: tuple[int, ...],
        dilation: tuple[int, ...],
        conv_in: tuple[int, ...],
        conv_out: tuple[int, ...],
    ) -> None:
        self.c, self.o, self.g, self.pad, self.conv_in = channels, num_output, group, pad, conv_in
        self.workspace = backend.Workspace()
        self.windows = Geometry(kernel, stride, dilation, conv_out, group)
        # The stride-1 data gradient as a convolution of dY needs a padding of extent - 1 - pad >= 0.
        self.flip_pad = tuple(d * (k - 1) - p for k, p, d in zip(kernel, pad, dilation))
        # It multiplies over the padded dY, so it pays only where the conv input is not much larger
        # than the output (LeNet's conv2, 12 x 12 -> 8 x 8, is 2.25x cheaper as a scatter).
        larger = (conv_in[0] * conv_in[1]) / max(1, conv_out[0] * conv_out[1])
        self.gather = all(s == 1 for s in stride) and min(self.flip_pad) >= 0 and larger <= GATHER_MAX_GROWTH
        self.flipped = Geometry(kernel, (1, 1), dilation, conv_in, group)

    def weights(self, w: Any) -> Any:
        return w.reshape(self.g, self.o // self.g, -1)

    def forward(self, x: Any, w: Any, y: Any, bias: Any = None) -> None:
        """y (N, O, OH, OW) = conv(x (N, C, H, W)) (+ bias)."""
        source = Layout(x, self.pad, self.workspace, "x")
        convolve(source, self.weights(w), y, self.windows, bias, self.workspace, "f")

    def weight_gradient(self, x: Any, dy: Any, dw: Any) -> None:
        """dw += dY cols(x)^T, summed over the batch."""
        ws, g, og, ow = self.workspace, self.g, self.o // self.g, self.windows.out[1]
        source = Layout(x, self.pad, ws, "x")
        kg = dw[0].size
        groups = Groups(x.shape[0], self.windows.out, g * kg * x.itemsize)
        parts: dict[int, Any] = {}

        def images(first: int, stop: int) -> None:
            col = ws.get(f"col{first}", (g * kg * groups.most,), x.dtype, np)
            grad = ws.get(f"dy{first}", (self.o * groups.most,), x.dtype, np)
            total = ws.get(f"dw{first}", (g, og, kg), x.dtype, np)
            product = ws.get(f"dw_part{first}", (g, og, kg), x.dtype, np)
            total[...] = 0
            for group in range(first, stop):
                a, b = groups.images_of(group)
                padded = source.get(a, b, first)
                for r0, r1 in groups.rows_of():
                    cols = self.windows.columns(padded, r0, r1, col)
                    m = cols.shape[-1]
                    block = grad[: self.o * m].reshape(self.o, r1 - r0, ow, b - a)
                    np.copyto(block, dy[a:b, :, r0:r1].transpose(1, 2, 3, 0))
                    np.matmul(block.reshape(g, og, m), cols.transpose(0, 2, 1), out=product)
                    total += product
            parts[first] = total

        parallel.run(images, groups.count(), np)
        dw += sum(parts[k] for k in sorted(parts)).reshape(dw.shape)  # a fixed order per thread count

    def data_gradient(self, dy: Any, w: Any, dx: Any) -> None:
        """dx (N, C, H, W) = the data gradient for dy (N, O, OH, OW)."""
        if not self.gather:
            self.scatter_data_gradient(dy, w, dx)
            return
        g, (kh, kw) = self.g, self.windows.kernel
        # W' (G, C/G, O/G kh kw): W' [g, c, (o, i, j)] = W[g O/G + o, c, kh - 1 - i, kw - 1 - j]
        parts = w.reshape(g, self.o // g, self.c // g, kh, kw)[..., ::-1, ::-1].transpose(0, 2, 1, 3, 4)
        flipped = np.ascontiguousarray(parts).reshape(g, self.c // g, -1)
        source = Layout(dy, self.flip_pad, self.workspace, "dy")
        convolve(source, flipped, dx, self.flipped, None, self.workspace, "b")

    def scatter_data_gradient(self, dy: Any, w: Any, dx: Any) -> None:
        """dcols = W^T dY a block at a time, each kernel offset's columns added onto its pixels."""
        ws, g, n = self.workspace, self.g, dy.shape[0]
        (kh, kw), (sh, sw), (dh, dw_), (_, ow) = (
            self.windows.kernel,
            self.windows.stride,
            self.windows.dilation,
            self.windows.out,
        )
        wt = self.weights(w).transpose(0, 2, 1)  # (G, Kg, O/G)
        kg = wt.shape[1]
        full = (n, self.c, *(i + 2 * p for i, p in zip(self.conv_in, self.pad)))
        target = ws.get("dx_padded", full, dx.dtype, np) if any(self.pad) else dx
        blocks = Blocks(self.windows.out, g * kg * dy.itemsize)
        s_n, s_c, s_h, s_w = target.strides

        def images(first: int, stop: int) -> None:
            col = ws.get(f"col{first}", (g, kg, blocks.most), dy.dtype, np)
            grad = ws.get(f"dy{first}", (self.o * blocks.most,), dy.dtype, np)
            target[first:stop] = 0
            for block in blocks.of(first, stop):
                a, b, r0, r1 = block
                m = self.windows.positions(block)
                cols = col.reshape(-1)[: g * kg * m].reshape(g, kg, m)
                np.matmul(wt, batch_inner(dy, block, grad, g), out=cols)
                offsets = cols.reshape(self.c, kh, kw, b - a, r1 - r0, ow)
                for i in range(kh):
                    for j in range(kw):
                        base = target[a:b, :, r0 * sh + i * dh :, j * dw_ :]
                        shape = (b - a, self.c, r1 - r0, ow)
                        pixels = as_strided(base, shape, (s_n, s_c, sh * s_h, sw * s_w))
                        pixels += offsets[:, i, j].transpose(1, 0, 2, 3)
            if target is not dx:
                (ph, pw), (h, w_) = self.pad, self.conv_in
                dx[first:stop] = target[first:stop, :, ph : ph + h, pw : pw + w_]

        parallel.run(images, n, np)
