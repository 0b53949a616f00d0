"""Pooling: MAX, AVE or STOCHASTIC over 2-D windows, as Caffe's PoolingLayer.

Shapes: (N, C, H, W) -> (N, C, PH, PW), PH = round((H + 2 pad_h - kernel_h) / stride_h) + 1 with round
= ceil (CEIL, the default) or floor (FLOOR); with padding on either axis, a last window that would
start past the image (in the padding after it) is dropped, on both axes. Window (ph, pw) covers rows
ph stride_h - pad_h .. + kernel_h, clipped to the image.
  MAX: the largest value, from -FLT_MAX, as Caffe's loop: the first one in raster order on ties, NaN
       passed over; the optional second top holds its index h W + w as a float (-1: none). dE/dx goes
       to that element.
  AVE: the sum over the clipped window divided by the window's size clipped to the *padded* image
       (Caffe's pad-aware divisor; 0 / 0 = NaN for a window wholly past an unpadded image); dE/dx
       spreads dE/dy / size over the window.
  STOCHASTIC (no padding): TRAIN picks one element with probability x / sum(window) (inputs are taken as
       non-negative) and passes the gradient to it; TEST outputs sum(x^2) / sum(x).
In general the windows are gathered as patches (K, N, C, PH, PW) and reduced over K: a reshape when the
windows tile the image (stride = kernel, global pooling, SPP), else one strided slice per kernel offset.
That is the reference path (AVE's on the GPU; on the CPU AVE sums along window rows, then down
them, over strided views: engine.layers.pooling_cpu). MAX has a faster one on each device: on the
GPU, fused kernels (engine.kernels) that keep an int32 argmax; on the CPU in float32, compiled
kernels that go along each row, then down the rows, keeping an int32 index (engine.layers.max_pool);
else a tournament over the frame's phase planes a block of images at a time, keeping each window's
int8 choice (engine.layers.pooling_cpu).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, TypeVar

import numpy as np

from engine import backend, kernels, rng
from engine.blob import Blob, shape_string
from engine.layers import facts, max_pool, pooling_cpu
from engine.layers.base import Layer
from engine.layers.conv import check_workspace
from engine.layers.im2col import kernel_offsets, window_slices
from engine.layers.registry import register_layer
from proto import caffe_pb2

P = caffe_pb2.PoolingParameter
FLT_MIN = float(np.finfo(np.float32).tiny)  # Caffe's guard against an all-zero stochastic window
CpuPool = TypeVar("CpuPool", bound=pooling_cpu.PhasePool)
LOWEST = pooling_cpu.LOWEST  # Caffe's MAX pooling starts from -FLT_MAX


@register_layer("Pooling")
class PoolingLayer(Layer):
    exact_num_bottom = 1
    min_top = 1
    max_top = 2
    family = "pooling"
    params = ("pooling_param",)
    template = "pooling_param { pool: MAX kernel_size: 2 stride: 2 }"

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        p = param.pooling_param
        if p.HasField("kernel_size"):
            yield from facts.positive("kernel_size", p.kernel_size)
        if p.HasField("stride"):
            yield from facts.positive("stride", p.stride)
        if p.HasField("kernel_size") and p.pad >= p.kernel_size > 0:
            yield f"pad {p.pad} must be smaller than kernel_size {p.kernel_size}"
        if p.global_pooling and (p.HasField("kernel_size") or p.HasField("kernel_h")):
            yield "global_pooling takes no kernel size"

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.pooling_param
        has = p.HasField
        self.workspace = backend.Workspace()
        self.cpu: pooling_cpu.PhasePool | None = None  # the CPU's MAX or AVE (cpu_pool)
        self.fast: str | None = None
        self.method, self.global_pooling = p.pool, p.global_pooling
        if len(top) > 1 and self.method != P.MAX:
            raise self.error("only MAX pooling can output a second (mask) top")
        if self.global_pooling:
            if has("kernel_size") or has("kernel_h") or has("kernel_w"):
                raise self.error("with global_pooling: true, filter size cannot be specified")
            self.kernel: tuple[int, ...] = (0, 0)  # set from the bottom in reshape
        else:
            # Caffe's test: kernel_size, or both kernel_h and kernel_w, but not both ways (a lone
            # kernel_h beside kernel_size is ignored, as there).
            if has("kernel_size") and has("kernel_h") and has("kernel_w"):
                raise self.error("filter size is kernel_size OR kernel_h and kernel_w; not both")
            if not has("kernel_size") and not (has("kernel_h") and has("kernel_w")):
                raise self.error("needs kernel_size, or both kernel_h and kernel_w (or global_pooling)")
            self.kernel = (p.kernel_size,) * 2 if has("kernel_size") else (p.kernel_h, p.kernel_w)
            if min(self.kernel) <= 0:
                raise self.error(f"filter dimensions cannot be zero, got kernel {self.kernel}")
        for name in ("pad", "stride"):
            if (has(name) or not (has(f"{name}_h") and has(f"{name}_w"))) and (
                has(f"{name}_h") or has(f"{name}_w")
            ):
                raise self.error(f"{name} is {name} OR {name}_h and {name}_w are required")
        self.pad = (p.pad_h, p.pad_w) if has("pad_h") else (p.pad,) * 2
        self.stride = (p.stride_h, p.stride_w) if has("stride_h") else (p.stride,) * 2
        if self.global_pooling and (any(self.pad) or self.stride != (1, 1)):
            raise self.error("with global_pooling: true; only pad = 0 and stride = 1")
        if min(self.stride) <= 0:
            raise self.error(f"stride cannot be zero, got {self.stride}")
        if any(self.pad):
            if self.method not in (P.MAX, P.AVE):
                raise self.error("padding implemented only for average and max pooling")
            if not self.global_pooling and any(p >= k for p, k in zip(self.pad, self.kernel)):
                raise self.error(f"pad {self.pad} must be smaller than kernel {self.kernel}")

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        if bottom[0].num_axes != 4:
            raise self.error(
                f"input must have 4 axes (num, channels, height, width), got {shape_string(bottom[0].shape)}"
            )
        self.size = bottom[0].shape[2:]
        if self.global_pooling:
            self.kernel = self.size
        round_ = math.ceil if self.param.pooling_param.round_mode == P.CEIL else math.floor
        pooled = []
        padded = any(self.pad)
        for size, k, p, s in zip(self.size, self.kernel, self.pad, self.stride):
            n = int(round_((size + 2 * p - k) / s)) + 1
            # With any padding (on either axis, as Caffe tests pad_h || pad_w), the last window must
            # start inside the image (or its padding before), not past it.
            if padded and (n - 1) * s >= size + p:
                n -= 1
            if n <= 0:
                raise self.error(
                    f"kernel {self.kernel} does not fit the padded input {shape_string(bottom[0].shape)}"
                )
            pooled.append(n)
        self.pooled = tuple(pooled)
        # Padded frame covering every window: pad before, and after as far as the last window reaches.
        self.frame = tuple((n - 1) * s + k for n, s, k in zip(self.pooled, self.stride, self.kernel))
        # Windows that do not tile the frame are gathered one kernel offset at a time.
        check_workspace(
            self, () if self.tiled() else self.kernel, {"padded input": (*bottom[0].shape[:2], *self.frame)}
        )
        for blob in top:
            blob.reshape((*bottom[0].shape[:2], *self.pooled))
        if self.method == P.AVE:
            # Caffe's divisor: the window clipped to the padded image, before clipping to the image.
            sizes = []
            for size, n, k, p, s in zip(self.size, self.pooled, self.kernel, self.pad, self.stride):
                start = np.arange(n) * s - p
                sizes.append(np.minimum(start + k, size + p) - start)
            # A window past the image (stride > kernel, no padding) has a size of 0 or less: its sum
            # is 0 and Caffe's 0 / 0 gives NaN (0 / negative gives -0), kept here.
            self.divisor = self.xp.asarray(np.outer(*sizes).astype(self.dtype))

    # --- windows as patches ------------------------------------------------------------------
    def framed(self, x: Any, fill: float) -> Any:
        """``x`` in a (N, C, *frame) array at offset pad, the rest ``fill``: the frame holds every window."""
        if not any(self.pad) and all(f <= s for f, s in zip(self.frame, self.size)):
            return x[self.frame_in_image()]  # every window lies inside the image: no copy
        out = self.xp.full((*x.shape[:2], *self.frame), fill, self.dtype)
        out[self.image_in_frame()] = x[self.frame_in_image()]
        return out

    def image_in_frame(self) -> tuple[Any, ...]:
        return (..., *(slice(p, min(p + s, f)) for p, s, f in zip(self.pad, self.size, self.frame)))

    def frame_in_image(self) -> tuple[Any, ...]:
        return (..., *(slice(0, min(s, f - p)) for p, s, f in zip(self.pad, self.size, self.frame)))

    def whole_image(self) -> bool:
        """A single window, the whole image (global pooling, or a kernel the image's size, no padding)."""
        return self.pooled == (1, 1) and not any(self.pad) and tuple(self.kernel) == tuple(self.size)

    def tiled(self) -> bool:
        """Windows tile the frame (patches are a reshape): stride = kernel, or a single window."""
        return self.stride == self.kernel or self.pooled == (1, 1)

    def patches(self, frame: Any) -> Any:
        """(K, N, C, PH, PW): the K = kernel_h kernel_w values of every window, in raster order."""
        n, c = frame.shape[:2]
        (ph, pw), (kh, kw) = self.pooled, self.kernel
        if self.tiled():
            tiles = frame.reshape(n, c, ph, kh, pw, kw).transpose(3, 5, 0, 1, 2, 4)
            return tiles.reshape(kh * kw, n, c, ph, pw)
        out = self.xp.empty((kh * kw, n, c, ph, pw), self.dtype)
        for i, offset in enumerate(kernel_offsets(self.kernel)):  # one strided slice per offset
            out[i] = frame[(..., *window_slices(offset, self.pooled, self.stride))]
        return out

    def unpatch(self, values: Any, bottom: Blob) -> None:
        """Sum patch values (K, N, C, PH, PW) back onto the pixels they came from, into bottom's diff."""
        k, n, c, ph, pw = values.shape
        kh, kw = self.kernel
        if self.tiled():
            frame = (
                values.reshape(kh, kw, n, c, ph, pw).transpose(2, 3, 4, 0, 5, 1).reshape(n, c, *self.frame)
            )
        else:
            frame = self.xp.zeros((n, c, *self.frame), self.dtype)
            for i, offset in enumerate(kernel_offsets(self.kernel)):
                frame[(..., *window_slices(offset, self.pooled, self.stride))] += values[i]
        bottom.diff[...] = 0
        bottom.diff[self.frame_in_image()] = frame[self.image_in_frame()]

    def chosen(self, dy: Any) -> Any:
        """dy placed at each window's chosen element (K, N, C, PH, PW), zero elsewhere."""
        k = self.xp.arange(self.kernel[0] * self.kernel[1]).reshape(-1, 1, 1, 1, 1)
        return self.xp.where(k == self.choice, dy, 0)

    # --- forward / backward ------------------------------------------------------------------
    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        x, y = bottom[0].data, top[0].data
        self.fast = None
        if self.method == P.MAX:
            self.fast = self.max_path(x)
            if self.fast == "kernel":
                kernels.max_pool_forward(x, y, self.index, self.kernel, self.stride, self.pad)
                if len(top) > 1:
                    top[1].data[...] = self.index
                return
            if self.fast == "compiled":
                if not max_pool.forward(x, y, self.index, self.geometry()):
                    raise AssertionError("max_path chose the compiled kernels for arrays they refuse")
                if len(top) > 1:
                    top[1].data[...] = self.index
                return
            if self.fast == "cpu":
                cpu_max = self.cpu_pool(pooling_cpu.MaxPool, x)
                cpu_max.forward(x, y)
                if len(top) > 1:
                    top[1].data[...] = cpu_max.mask()
                return
            values = self.patches(self.framed(x, -np.inf))
            # Caffe starts from -FLT_MAX and keeps the first strictly greater value: no choice below
            # that, and a NaN (never greater) is passed over; fmax ignores NaN as that does.
            best = xp.fmax(values[0], LOWEST)
            for i in range(1, len(values)):
                xp.fmax(best, values[i], out=best)
            self.choice = xp.full(y.shape, -1, np.int32)
            for i in reversed(range(len(values))):  # the first maximum wins (numpy's argmax(axis=0) is slow)
                self.choice = xp.where(values[i] == best, i, self.choice)
            self.choice = xp.where(best > LOWEST, self.choice, -1)
            y[...] = best
            if len(top) > 1:
                top[1].data[...] = self.mask()
        elif self.method == P.AVE and xp is np and self.whole_image():
            # One window per image channel (global pooling): its values as rows of one scratch, summed
            # row after row, so each window in raster order as Caffe's loop; no phase planes.
            n, c, h, w = x.shape
            columns = backend.scratch("pool_whole", (h * w, n * c), x.dtype)
            np.copyto(columns, x.reshape(n * c, h * w).T)
            np.add.reduce(columns, axis=0, out=y.reshape(-1))
            with np.errstate(invalid="ignore", divide="ignore"):  # Caffe's 0 / 0 of an empty image
                np.divide(y, self.divisor, out=y)
        elif self.method == P.AVE and xp is np:  # the frame's phase planes (pooling_cpu)
            self.cpu_pool(pooling_cpu.AvePool, x).forward(x, self.divisor, y)
        elif self.method == P.AVE:
            with np.errstate(invalid="ignore", divide="ignore"):  # Caffe's 0 / 0 of empty windows
                xp.divide(self.patches(self.framed(x, 0)).sum(axis=0), self.divisor, out=y)
        elif self.phase == caffe_pb2.TRAIN:  # STOCHASTIC: draw one element by its share of the window's sum
            values = self.patches(self.framed(x, 0))
            cumulative = xp.cumsum(values, axis=0)
            threshold = cumulative[-1] * (
                1 - rng.for_module(xp).random(y.shape, dtype=self.dtype)
            )  # u in (0, 1]
            self.choice = (cumulative >= threshold).argmax(axis=0)
            y[...] = xp.take_along_axis(values, self.choice[None], axis=0)[0]
        else:  # STOCHASTIC in TEST: the values weighted by themselves
            values = self.patches(self.framed(x, 0))
            self.total = FLT_MIN + values.sum(axis=0)
            xp.divide((values * values).sum(axis=0), self.total, out=y)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0]:
            return
        xp, dy = self.xp, top[0].diff
        if self.method == P.AVE and xp is np and self.whole_image():  # each pixel: its one window's share
            with np.errstate(invalid="ignore", divide="ignore"):
                np.copyto(bottom[0].diff, np.divide(dy, self.divisor))
        elif self.method == P.AVE and xp is np:
            self.cpu_pool(pooling_cpu.AvePool, bottom[0].data).backward(dy, self.divisor, bottom[0].diff)
        elif self.method == P.AVE:
            k = self.kernel[0] * self.kernel[1]
            with np.errstate(invalid="ignore", divide="ignore"):  # empty windows reach no pixel
                share = dy / self.divisor
            self.unpatch(xp.broadcast_to(share, (k, *dy.shape)), bottom[0])
        elif self.method == P.MAX and self.fast == "kernel":
            kernels.max_pool_backward(dy, self.index, bottom[0].diff, self.kernel, self.stride, self.pad)
        elif self.method == P.MAX and self.fast == "compiled":
            if not max_pool.backward(dy, self.index, bottom[0].diff, self.geometry()):
                raise AssertionError("the compiled MAX pooling refuses the arrays its forward took")
        elif self.method == P.MAX and self.fast == "cpu":
            self.cpu_pool(pooling_cpu.MaxPool, bottom[0].data).backward(dy, bottom[0].diff)
        elif self.method == P.MAX or self.phase == caffe_pb2.TRAIN:
            self.unpatch(self.chosen(dy), bottom[0])
        else:  # d/dx_j of sum(x^2) / sum(x) = (2 x_j - y) / sum(x)
            values = self.patches(self.framed(bottom[0].data, 0))
            self.unpatch(dy * (2 * values - top[0].data) / self.total, bottom[0])

    # --- the faster paths ---------------------------------------------------------------------
    def cpu_pool(self, kind: type[CpuPool], x: Any) -> CpuPool:
        """This layer's CPU pooling of ``kind`` for bottoms like x, made again when the geometry changes."""
        geometry = (self.kernel, self.stride, self.pooled, x.shape, self.dtype, self.pad)
        known = self.cpu
        if not isinstance(known, kind) or known.geometry != pooling_cpu.geometry_key(*geometry[:4], self.pad):
            known = self.cpu = kind(self.workspace, *geometry)
        return known

    def max_path(self, x: Any) -> str | None:
        """'kernel' (the GPU's fused kernels), 'compiled' (the CPU's, engine.layers.max_pool, float32),
        'cpu' (engine.layers.pooling_cpu), or None (patches)."""
        if kernels.enabled(x) and x.dtype == self.dtype:
            self.index = self.workspace.get("index", (*x.shape[:2], *self.pooled), np.int32, self.xp)
            return "kernel"
        compiled = self.xp is np and x.dtype == np.float32 and x.flags.c_contiguous and max_pool.available()
        if compiled:
            self.index = self.workspace.get("index", (*x.shape[:2], *self.pooled), np.int32, np)
            return "compiled"
        return "cpu" if self.xp is np else None

    def geometry(self) -> Any:
        """The compiled kernels' geometry of this layer's windows (engine.layers.max_pool)."""
        return max_pool.geometry(self.size, self.pooled, self.kernel, self.stride, self.pad)

    def mask(self) -> Any:
        """Caffe's MAX mask: the flat index h W + w of each chosen element, -1 where none was."""
        xp = self.xp
        kh, kw = self.kernel
        rows = xp.arange(self.pooled[0]).reshape(-1, 1) * self.stride[0] - self.pad[0] + self.choice // kw
        cols = xp.arange(self.pooled[1]) * self.stride[1] - self.pad[1] + self.choice % kw
        return xp.where(self.choice < 0, -1, rows * self.size[1] + cols)
