"""LRN: local response normalization, across channels or within each channel, as Caffe's LRNLayer.

Shapes: (N, C, H, W) -> the same. With n = local_size (odd) and the window centred on each element,
zero-padded at the borders:
  ACROSS_CHANNELS: scale = k + alpha / n * sum of x^2 over the n neighbouring channels;
  WITHIN_CHANNEL:  scale = 1 + alpha / n^2 * sum of x^2 over the n x n spatial neighbours. Caffe builds
                   this one from Power, AVE Pooling (pad (n - 1) / 2, whose divisor is always n^2) and
                   Eltwise sub-layers with shift 1, so ``k`` is not used.
  y = x scale^-beta.
Gradient: dE/dx = dE/dy scale^-beta - 2 alpha beta / size * x * window_sum(dE/dy y / scale), where
size is n (across) or n^2 (within) and window_sum is the same zero-padded window sum.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine.blob import Blob, shape_string
from engine.layers.base import Layer
from engine.layers.registry import register_layer
from proto import caffe_pb2


@register_layer("LRN")
class LRNLayer(Layer):
    exact_num_bottom = 1
    exact_num_top = 1
    family = "normalisation"
    params = ("lrn_param",)
    template = "lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 }"

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        if param.lrn_param.local_size % 2 == 0:
            yield f"local_size must be a positive odd number (got {param.lrn_param.local_size})"

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.lrn_param
        if p.local_size % 2 != 1:
            raise self.error(f"LRN only supports odd values for local_size, got {p.local_size}")
        self.local_size, self.alpha, self.beta = p.local_size, p.alpha, p.beta
        self.axes: tuple[int, ...]
        if p.norm_region == caffe_pb2.LRNParameter.ACROSS_CHANNELS:
            self.axes, self.k, self.size = (1,), p.k, p.local_size
        else:
            self.axes, self.k, self.size = (2, 3), 1.0, p.local_size**2

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        if bottom[0].num_axes != 4:
            raise self.error(
                f"input must have 4 axes (num, channels, height, width), got {shape_string(bottom[0].shape)}"
            )
        top[0].reshape(bottom[0].shape)

    def window_sum(self, a: Any) -> Any:
        """Sum over the zero-padded local window of every element (separable over the window's axes)."""
        xp = self.xp
        for axis in self.axes:
            length = a.shape[axis]
            # A window reaching past both ends sums the same as one just reaching them: the rest is
            # zero padding. Narrowing it keeps a huge local_size from allocating its whole padding.
            half = min((self.local_size - 1) // 2, max(length - 1, 0))
            n = 2 * half + 1
            shape = list(a.shape)
            shape[axis] += n - 1
            padded = xp.zeros(shape, self.dtype)
            padded[(slice(None),) * axis + (slice(half, half + length),)] = a
            a = sum(padded[(slice(None),) * axis + (slice(i, i + length),)] for i in range(n))
        return a

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        x = bottom[0].data
        self.scale = self.k + (self.alpha / self.size) * self.window_sum(x * x)
        top[0].data[...] = x * self.scale ** (-self.beta)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0]:
            return
        x, y, dy = bottom[0].data, top[0].data, top[0].diff
        spread = self.window_sum(dy * y / self.scale)
        bottom[0].diff[...] = (
            dy * self.scale ** (-self.beta) - (2 * self.alpha * self.beta / self.size) * x * spread
        )
