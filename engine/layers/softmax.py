"""Softmax over ``softmax_param.axis`` (default 1); every other axis indexes an independent distribution.

Shapes: top = bottom. y = exp(x - max x) / sum exp(x - max x) along the axis (the max is
subtracted for numerical stability). Gradient: dE/dx = y * (dE/dy - sum(dE/dy * y)) along the axis.
May run in place.
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("Softmax")
class SoftmaxLayer(Layer):
    exact_num_bottom = 1
    exact_num_top = 1
    family = "loss"
    params = ("softmax_param",)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        try:
            self.axis = bottom[0].canonical_axis_index(self.param.softmax_param.axis)
        except ValueError as exc:
            raise self.error(str(exc)) from None
        top[0].reshape(bottom[0].shape)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        if bottom[0].count() == 0:  # an empty axis has no maximum to subtract
            return
        xp = self.xp
        x, y = bottom[0].data, top[0].data
        xp.subtract(x, x.max(axis=self.axis, keepdims=True), out=y)
        xp.exp(y, out=y)
        y /= y.sum(axis=self.axis, keepdims=True)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0] or bottom[0].count() == 0:
            return
        xp = self.xp
        y, dy = top[0].data, top[0].diff
        dot = (dy * y).sum(axis=self.axis, keepdims=True)
        xp.subtract(dy, dot, out=bottom[0].diff)
        bottom[0].diff *= y
