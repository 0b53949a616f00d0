"""Pooling: MAX, AVE or STOCHASTIC over 2-D windows, as Caffe's PoolingLayer.

Shapes: (N, C, H, W) -> (N, C, PH, PW), PH = round((H + 2 pad_h - kernel_h) / stride_h) + 1 with round
= ceil (CEIL, the default) or floor (FLOOR); with padding, a last window that would start in the
padding is dropped. Window (ph, pw) covers rows ph stride_h - pad_h .. + kernel_h, clipped to the image.
  MAX: the largest value (the first one in raster order on ties); the optional second top holds its
       index h W + w as a float. dE/dx goes to that element.
  AVE: the sum over the clipped window divided by the window's size clipped to the *padded* image
       (Caffe's pad-aware divisor); dE/dx spreads dE/dy / size over the window.
  STOCHASTIC (no padding): TRAIN picks one element with probability x / sum(window) (inputs are taken as
       non-negative) and passes the gradient to it; TEST outputs sum(x^2) / sum(x).
Every mode loops over the kernel offsets (kernel_h kernel_w strided slices), never over pixels.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from engine import rng
from engine.blob import Blob, shape_string
from engine.layers.base import Layer
from engine.layers.im2col import kernel_offsets, window_slices
from engine.layers.registry import register_layer
from proto import caffe_pb2

P = caffe_pb2.PoolingParameter
FLT_MIN = float(np.finfo(np.float32).tiny)  # Caffe's guard against an all-zero stochastic window


@register_layer("Pooling")
class PoolingLayer(Layer):
    exact_num_bottom = 1
    min_top = 1
    max_top = 2

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.pooling_param
        has = p.HasField
        self.method, self.global_pooling = p.pool, p.global_pooling
        if len(top) > 1 and self.method != P.MAX:
            raise self.error("only MAX pooling can output a second (mask) top")
        if self.global_pooling:
            if has("kernel_size") or has("kernel_h") or has("kernel_w"):
                raise self.error("with global_pooling: true, filter size cannot be specified")
            self.kernel = (0, 0)  # set from the bottom in reshape
        else:
            if has("kernel_size") and (has("kernel_h") or has("kernel_w")):
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
        for size, k, p, s in zip(self.size, self.kernel, self.pad, self.stride):
            n = int(round_((size + 2 * p - k) / s)) + 1
            if p and (n - 1) * s >= size + p:
                n -= 1  # the last window must start inside the image, not in the padding
            if n <= 0:
                raise self.error(
                    f"kernel {self.kernel} does not fit the padded input {shape_string(bottom[0].shape)}"
                )
            pooled.append(n)
        self.pooled = tuple(pooled)
        # Padded frame covering every window: pad before, and after as far as the last window reaches.
        self.frame = tuple((n - 1) * s + k for n, s, k in zip(self.pooled, self.stride, self.kernel))
        for blob in top:
            blob.reshape((*bottom[0].shape[:2], *self.pooled))
        if self.method == P.AVE:
            # Caffe's divisor: the window clipped to the padded image, before clipping to the image.
            sizes = []
            for size, n, k, p, s in zip(self.size, self.pooled, self.kernel, self.pad, self.stride):
                start = np.arange(n) * s - p
                sizes.append(np.minimum(start + k, size + p) - start)
            divisor = np.maximum(
                np.outer(*sizes), 1
            )  # a window wholly outside (stride > kernel) averages to 0
            self.divisor = self.xp.asarray(divisor.astype(self.dtype))

    # --- the padded frame --------------------------------------------------------------------
    def framed(self, x: Any, fill: float) -> Any:
        """``x`` placed in a (N, C, *frame) array at offset pad, the rest ``fill``."""
        out = self.xp.full((*x.shape[:2], *self.frame), fill, self.dtype)
        out[self.image_in_frame()] = x[self.frame_in_image()]
        return out

    def image_in_frame(self) -> tuple[slice, ...]:
        return (..., *(slice(p, min(p + s, f)) for p, s, f in zip(self.pad, self.size, self.frame)))

    def frame_in_image(self) -> tuple[slice, ...]:
        return (..., *(slice(0, min(s, f - p)) for p, s, f in zip(self.pad, self.size, self.frame)))

    def windows(self) -> Iterator[tuple[int, tuple[Any, ...]]]:
        """(offset index, slice of the frame) for each kernel offset, in raster order."""
        for i, offset in enumerate(kernel_offsets(self.kernel)):
            yield i, (..., *window_slices(offset, self.pooled, self.stride))

    def unframe(self, frame: Any, bottom: Blob) -> None:
        bottom.diff[...] = 0
        bottom.diff[self.frame_in_image()] = frame[self.image_in_frame()]

    # --- forward / backward ------------------------------------------------------------------
    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        x, y = bottom[0].data, top[0].data
        if self.method == P.MAX:
            frame = self.framed(x, -np.inf)
            y[...] = np.finfo(np.float32).min  # Caffe's -FLT_MAX start: a window of -inf stays there
            self.choice = xp.full(y.shape, -1, np.int32)
            for i, window in self.windows():
                better = frame[window] > y
                self.choice = xp.where(better, i, self.choice)
                xp.maximum(y, frame[window], out=y)
            if len(top) > 1:
                top[1].data[...] = self.mask()
        elif self.method == P.AVE:
            frame = self.framed(x, 0)
            y[...] = 0
            for _, window in self.windows():
                y += frame[window]
            y /= self.divisor
        elif self.phase == caffe_pb2.TRAIN:  # STOCHASTIC: draw one element by its share of the sum
            frame = self.framed(x, 0)
            total = sum(frame[window] for _, window in self.windows())
            threshold = total * (1 - rng.for_module(xp).random(y.shape, dtype=self.dtype))  # u in (0, 1]
            cumulative = xp.zeros_like(y)
            self.choice = xp.full(y.shape, -1, np.int32)
            for i, window in self.windows():
                cumulative += frame[window]
                hit = (cumulative >= threshold) & (self.choice < 0)
                self.choice = xp.where(hit, i, self.choice)
            y[...] = 0
            for i, window in self.windows():
                y += xp.where(self.choice == i, frame[window], 0)
        else:  # STOCHASTIC in TEST: the values weighted by themselves
            frame = self.framed(x, 0)
            self.total = FLT_MIN + sum(frame[window] for _, window in self.windows())
            y[...] = sum(frame[window] ** 2 for _, window in self.windows()) / self.total

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0]:
            return
        xp = self.xp
        dy = top[0].diff
        frame = xp.zeros((*dy.shape[:2], *self.frame), self.dtype)
        if self.method == P.AVE:
            share = dy / self.divisor
            for _, window in self.windows():
                frame[window] += share
        elif self.method == P.MAX or self.phase == caffe_pb2.TRAIN:
            for i, window in self.windows():
                frame[window] += xp.where(self.choice == i, dy, 0)
        else:  # d/dx_j of sum(x^2) / sum(x) = (2 x_j - y) / sum(x)
            x, y = self.framed(bottom[0].data, 0), top[0].data
            for _, window in self.windows():
                frame[window] += dy * (2 * x[window] - y) / self.total
        self.unframe(frame, bottom[0])

    def mask(self) -> Any:
        """Caffe's MAX mask: the flat index h W + w of each chosen element, -1 where none was."""
        xp = self.xp
        kh, kw = self.kernel
        rows = xp.arange(self.pooled[0]).reshape(-1, 1) * self.stride[0] - self.pad[0] + self.choice // kw
        cols = xp.arange(self.pooled[1]) * self.stride[1] - self.pad[1] + self.choice % kw
        return xp.where(self.choice < 0, -1, rows * self.size[1] + cols)
