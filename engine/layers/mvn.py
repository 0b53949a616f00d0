"""MVN: mean (and variance) normalization of each sample, per channel or across channels."""

from __future__ import annotations

from typing import Any

from engine.blob import Blob
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("MVN")
class MVNLayer(Layer):
    """y = (x - mean) / (std + eps), or y = x - mean without normalize_variance.

    Statistics are taken over each (n, c) slice of x (N, C, ...), or over each sample n with
    across_channels; std is the population one (divided by the count). Gradient as Caffe's:
    dE/dx = (dE/dy - mean(dE/dy) - y * mean(dE/dy * y)) / (std + eps) (exact up to eps),
    or dE/dx = dE/dy - mean(dE/dy) without normalize_variance. In place allowed.
    """

    exact_num_bottom = 1
    exact_num_top = 1
    family = "normalisation"
    params = ("mvn_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.mvn_param
        self.normalize_variance = p.normalize_variance
        self.across_channels = p.across_channels
        self.eps = p.eps
        self.std: Any = None

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        if bottom[0].num_axes > 4:
            raise self.error(f"takes a bottom of at most 4 axes, got {bottom[0].shape}")
        top[0].reshape(bottom[0].shape)

    def _groups(self, blob: Blob) -> int:
        return blob.num if self.across_channels else blob.num * blob.channels

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        if bottom[0].count() == 0:  # an empty blob: no group to normalise
            return
        x = bottom[0].data.reshape(self._groups(bottom[0]), -1)
        y = x - x.mean(axis=1, keepdims=True)
        if self.normalize_variance:
            self.std = self.xp.sqrt((y * y).mean(axis=1, keepdims=True))
            self.std += self.eps
            y /= self.std
        top[0].data[...] = y.reshape(bottom[0].shape)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0] or bottom[0].count() == 0:
            return
        groups = self._groups(bottom[0])
        dy = top[0].diff.reshape(groups, -1)
        dx = dy - dy.mean(axis=1, keepdims=True)
        if self.normalize_variance:
            y = top[0].data.reshape(groups, -1)
            dx -= y * (dy * y).mean(axis=1, keepdims=True)
            dx /= self.std
        bottom[0].diff[...] = dx.reshape(bottom[0].shape)
