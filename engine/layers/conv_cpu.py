"""The CPU's fast 2-D convolution: channels-last columns, a block of images (or rows) at a time.

The algorithm is Caffe's (im2col, then one GEMM against the weight), laid out for numpy on a CPU:

* The conv input is copied once, channels last and zero-padded: X (N, H + 2 pad_h, W + 2 pad_w, C).
  A column row is then one output position's window (kh, kw, C / G per group), and each of its kh
  window rows is one contiguous run of kw C values: the copy that writes the columns moves long
  runs, not single values (per-image columns, C x kh x kw x (OH x OW), have runs of OW).
* Columns are made for a block of images (or, for large images, of output rows of one image) of
  about ``BLOCK_BYTES``, multiplied while they are still in the core's cache, and dropped:
  forward Y (M, G, O/G) = cols (M, G, Kg) x Wt (G, Kg, O/G), M = block outputs, Kg = kh kw C / G;
  weight gradient dWt += cols^T dY, one GEMM per block; the bias is added in the copy of Y back to
  (N, O, OH, OW).
* The data gradient with stride 1 is itself a convolution: of dY, zero-padded by
  dilation (k - 1) - pad, with the kernel flipped and its in/out channels swapped (each input
  pixel gathers the outputs whose windows read it); so it is made as the forward is, with no
  scatter. Other strides multiply dcols = dY W^T per block and add each kernel offset's columns
  onto the pixels they read (Caffe's col2im, in the same order of kernel offsets).
* Threads (engine.parallel) take ranges of images, each with its own scratch and its own partial
  weight gradient, summed in a fixed order at the end.
Results equal the reference path's (engine.layers.conv) up to float32 rounding: the same products,
summed in other orders (the weight gradient over blocks, the stride-1 data gradient over (kh, kw, O)
at once instead of O and then the offsets).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from engine import backend, parallel

# Columns per block: a few hundred KiB to a few MiB keeps a block in a core's L2/L3 here and its
# GEMMs large enough for BLAS's kernels (measured on CIFAR-10 quick's conv2, 2 MiB ran best).
BLOCK_BYTES = 2 << 20
CHANNEL_RUN = 8  # channels per copy where the channels of a (N, C, H, W) array alias in the cache
MIN_GROUP_CHANNELS = 4  # fewer input channels per group (depthwise): runs too short, the reference path


def applies(xp: Any, num_spatial: int, channels: int, group: int) -> bool:
    """Whether this path runs a convolution: numpy, 2-D, and not (nearly) depthwise."""
    return xp is np and num_spatial == 2 and (group == 1 or channels // group >= MIN_GROUP_CHANNELS)


class CpuConv:
    """One convolution geometry on the CPU (the convolution view: conv input -> conv output).

    ``conv_in``/``conv_out``: spatial sizes (the conv input's including any far padding)."""

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
        self.c, self.o, self.g = channels, num_output, group
        self.kernel, self.stride, self.pad, self.dilation = kernel, stride, pad, dilation
        self.conv_in, self.conv_out = conv_in, conv_out
        self.workspace = backend.Workspace()
        # The stride-1 data gradient as a convolution of dY needs a padding of extent - 1 - pad >= 0.
        self.flip_pad = tuple(d * (k - 1) - p for k, p, d in zip(kernel, pad, dilation))
        self.gather_dx = all(s == 1 for s in stride) and min(self.flip_pad) >= 0

    # --- weights in the columns' order ----------------------------------------------------------
    def weight_columns(self, w: Any) -> Any:
        """W (O, C/G, kh, kw) as Wt (G, kh kw C/G, O/G): row (kh, kw, c) of group g, column o."""
        g, (kh, kw) = self.g, self.kernel
        parts = w.reshape(g, self.o // g, self.c // g, kh, kw).transpose(0, 3, 4, 2, 1)
        return np.ascontiguousarray(parts).reshape(g, -1, self.o // g)

    def flipped_columns(self, w: Any) -> Any:
        """The data gradient's weight: (G, kh kw O/G, C/G), row (kh', kw', o): W[o, c, -1-kh', -1-kw']."""
        g, (kh, kw) = self.g, self.kernel
        parts = w.reshape(g, self.o // g, self.c // g, kh, kw)[..., ::-1, ::-1].transpose(0, 3, 4, 1, 2)
        return np.ascontiguousarray(parts).reshape(g, -1, self.c // g)

    # --- the passes --------------------------------------------------------------------------------
    def forward(self, x: Any, w: Any, y: Any, bias: Any = None) -> None:
        """y (N, O, OH, OW) = conv(x (N, C, H, W)) (+ bias)."""
        padded = self.channels_last("x", x, self.pad)
        geometry = (self.kernel, self.stride, self.dilation, self.conv_out)
        gemm(padded, self.weight_columns(w), y, geometry, self.g, bias, self.workspace, "f")

    def backward(self, x: Any, dy: Any, w: Any, dw: Any | None, dx: Any | None) -> None:
        """dw += the weight gradient (when not None), dx = the data gradient (when not None), from
        the conv input x and dy = dE/d(conv output)."""
        if dw is not None:
            self.weight_gradient(x, dy, dw)
        if dx is not None:
            self.data_gradient(dy, w, dx)

    def weight_gradient(self, x: Any, dy: Any, dw: Any) -> None:
        n, ws, g = x.shape[0], self.workspace, self.g
        padded = self.channels_last("x", x, self.pad)
        kg, og = self.c // g * math.prod(self.kernel), self.o // g
        blocks = Blocks(self.conv_out, g * kg * x.itemsize)
        parts: dict[int, Any] = {}

        def images(first: int, stop: int) -> None:
            col = ws.get(f"col{first}", (blocks.most, g, kg), x.dtype, np)
            dyc = ws.get(f"dy{first}", (blocks.most, self.o), x.dtype, np)
            total = ws.get(f"dw{first}", (g, kg, og), x.dtype, np)
            product = ws.get(f"dw_part{first}", (g, kg, og), x.dtype, np)
            total[...] = 0
            for a, b, r0, r1 in blocks.of(first, stop):
                m = (b - a) * (r1 - r0) * self.conv_out[1]
                cols = windows_into(
                    padded, a, b, r0, r1, self.kernel, self.stride, self.dilation, self.conv_out, g, col
                )
                to_channels_last(dyc[:m].reshape(b - a, r1 - r0, self.conv_out[1], self.o), dy[a:b, :, r0:r1])
                np.matmul(cols.transpose(1, 2, 0), dyc[:m].reshape(m, g, og).transpose(1, 0, 2), out=product)
                total += product
            parts[first] = total

        parallel.run(images, n, np)
        kh, kw = self.kernel
        total = sum(parts[k] for k in sorted(parts))  # a fixed order for a given thread count
        grad = np.asarray(total).reshape(g, kh, kw, self.c // g, og).transpose(0, 4, 3, 1, 2)
        dw += grad.reshape(dw.shape)

    def data_gradient(self, dy: Any, w: Any, dx: Any) -> None:
        if self.gather_dx:  # a convolution of dY with the flipped kernel
            padded = self.channels_last("dy", dy, self.flip_pad)
            geometry = (self.kernel, (1, 1), self.dilation, self.conv_in)
            gemm(padded, self.flipped_columns(w), dx, geometry, self.g, None, self.workspace, "b")
        else:
            self.scatter_data_gradient(dy, w, dx)

    def scatter_data_gradient(self, dy: Any, w: Any, dx: Any) -> None:
        """dcols = dY W^T a block at a time, each kernel offset's columns added onto its pixels."""
        n, ws, g = dy.shape[0], self.workspace, self.g
        (kh, kw), (sh, sw), (dh, dw_) = self.kernel, self.stride, self.dilation
        cg, og = self.c // g, self.o // g
        kg = kh * kw * cg
        w_rows = self.weight_columns(w).transpose(0, 2, 1)  # (G, O/G, Kg)
        full = tuple(i + 2 * p for i, p in zip(self.conv_in, self.pad))
        target = ws.get("dx_padded", (n, *full, self.c), dx.dtype, np)
        blocks = Blocks(self.conv_out, g * kg * dy.itemsize)
        ow = self.conv_out[1]

        def images(first: int, stop: int) -> None:
            col = ws.get(f"col{first}", (blocks.most, g, kg), dy.dtype, np)
            dyc = ws.get(f"dy{first}", (blocks.most, self.o), dy.dtype, np)
            target[first:stop] = 0
            s0, s1, s2, s3 = target.strides
            for a, b, r0, r1 in blocks.of(first, stop):
                m = (b - a) * (r1 - r0) * ow
                to_channels_last(dyc[:m].reshape(b - a, r1 - r0, ow, self.o), dy[a:b, :, r0:r1])
                cols = col[:m]
                np.matmul(dyc[:m].reshape(m, g, og).transpose(1, 0, 2), w_rows, out=cols.transpose(1, 0, 2))
                offsets = cols.reshape(b - a, r1 - r0, ow, g, kh, kw, cg)
                for i in range(kh):
                    for j in range(kw):
                        base = target[a:b, r0 * sh + i * dh :, j * dw_ :]
                        pixels = as_strided(
                            base, (b - a, r1 - r0, ow, g, cg), (s0, sh * s1, sw * s2, cg * s3, s3)
                        )
                        pixels += offsets[:, :, :, :, i, j]
            inner = target[
                first:stop,
                self.pad[0] : self.pad[0] + self.conv_in[0],
                self.pad[1] : self.pad[1] + self.conv_in[1],
            ]
            to_channels_first(dx[first:stop], inner)

        parallel.run(images, n, np)

    def channels_last(self, name: str, a: Any, pad: tuple[int, ...]) -> Any:
        """a (N, C, H, W) copied into a zero-bordered (N, H + 2 pad_h, W + 2 pad_w, C) scratch."""
        n, c, h, w = a.shape
        padded = self.workspace.get(name, (n, h + 2 * pad[0], w + 2 * pad[1], c), a.dtype, np, zeros=True)
        to_channels_last(padded[:, pad[0] : pad[0] + h, pad[1] : pad[1] + w], a)
        return padded


def aliased(a: Any) -> bool:
    """Whether a (N, C, H, W) array's channels lie a multiple of 4 KiB apart: a copy that gathers
    across them then keeps hitting the same cache sets (32 x 32 float maps ran 3x slower)."""
    return a.shape[1] > CHANNEL_RUN and a.strides[1] % 4096 == 0


def to_channels_last(target: Any, a: Any) -> None:
    """target (N, H, W, C) = a (N, C, H, W), a few channels at a time where the channels alias."""
    if not aliased(a):
        np.copyto(target, a.transpose(0, 2, 3, 1))
        return
    for c in range(0, a.shape[1], CHANNEL_RUN):
        np.copyto(target[..., c : c + CHANNEL_RUN], a[:, c : c + CHANNEL_RUN].transpose(0, 2, 3, 1))


def to_channels_first(target: Any, a: Any, shift: Any = None) -> None:
    """target (N, C, H, W) = a (N, H, W, C) (+ shift (C, 1, 1)), likewise."""
    step = CHANNEL_RUN if aliased(target) else target.shape[1]
    for c in range(0, target.shape[1], step):
        part = a[..., c : c + step].transpose(0, 3, 1, 2)
        if shift is None:
            np.copyto(target[:, c : c + step], part)
        else:
            np.add(part, shift[c : c + step], out=target[:, c : c + step])


class Blocks:
    """Blocks of a conv output, (a, b, r0, r1): images a..b, output rows r0..r1, whose columns
    (``row_bytes`` per output position) take about BLOCK_BYTES; ``most``: the most positions of one."""

    def __init__(self, out: tuple[int, ...], row_bytes: int) -> None:
        self.out = out
        per_image = out[0] * out[1] * row_bytes
        if per_image <= BLOCK_BYTES:
            self.images, self.rows = max(1, BLOCK_BYTES // per_image), out[0]
        else:
            self.images, self.rows = 1, max(1, min(out[0], BLOCK_BYTES // (out[1] * row_bytes)))
        self.most = self.images * self.rows * out[1]

    def of(self, first: int, stop: int) -> Any:
        for a in range(first, stop, self.images):
            b = min(a + self.images, stop)
            for r0 in range(0, self.out[0], self.rows):
                yield a, b, r0, min(r0 + self.rows, self.out[0])


def windows_into(
    padded: Any,
    a: int,
    b: int,
    r0: int,
    r1: int,
    kernel: Any,
    stride: Any,
    dilation: Any,
    out: Any,
    groups: int,
    col: Any,
) -> Any:
    """The columns of images a..b, output rows r0..r1, copied into ``col``'s first rows: (M, G, Kg)."""
    s0, s1, s2, s3 = padded.strides
    cg = padded.shape[3] // groups
    shape = (b - a, r1 - r0, out[1], groups, kernel[0], kernel[1], cg)
    strides = (s0, stride[0] * s1, stride[1] * s2, cg * s3, dilation[0] * s1, dilation[1] * s2, s3)
    m = shape[0] * shape[1] * shape[2]
    target = col[:m]
    np.copyto(target.reshape(shape), as_strided(padded[a:b, r0 * stride[0] :], shape, strides))
    return target


def gemm(
    padded: Any, wt: Any, y: Any, geometry: tuple[Any, ...], groups: int, bias: Any, ws: Any, tag: str
) -> None:
    """y (N, G O/G, OH, OW) = the convolution of the padded channels-last input with Wt (G, Kg, O/G),
    a block of columns at a time on engine.parallel's threads (+ bias, in the copy back)."""
    kernel, stride, dilation, out = geometry
    n, g, kg, og = padded.shape[0], groups, wt.shape[1], wt.shape[2]
    o = g * og
    blocks = Blocks(out, g * kg * padded.itemsize)
    ow = out[1]
    shift = None if bias is None else bias.reshape(-1, 1, 1)

    def images(first: int, stop: int) -> None:
        col = ws.get(f"{tag}col{first}", (blocks.most, g, kg), padded.dtype, np)
        yc = ws.get(f"{tag}y{first}", (blocks.most, o), padded.dtype, np)
        for a, b, r0, r1 in blocks.of(first, stop):
            m = (b - a) * (r1 - r0) * ow
            cols = windows_into(padded, a, b, r0, r1, kernel, stride, dilation, out, g, col)
            np.matmul(cols.transpose(1, 0, 2), wt, out=yc[:m].reshape(m, g, og).transpose(1, 0, 2))
            to_channels_first(y[a:b, :, r0:r1], yc[:m].reshape(b - a, r1 - r0, ow, o), shift)

    parallel.run(images, n, np)
