"""Dropout: zero each input with probability dropout_ratio while training (inverted dropout)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine import rng
from engine.blob import Blob
from engine.layers.base import NeuronLayer
from engine.layers.registry import register_layer
from proto import caffe_pb2


@register_layer("Dropout")
class DropoutLayer(NeuronLayer):
    """TRAIN: y = x * m / (1 - p) with m ~ Bernoulli(1 - p) drawn anew by every forward; TEST: y = x.

    dE/dx = dE/dy * m / (1 - p) in TRAIN (the mask of the last forward), dE/dy in TEST. The kept
    units are scaled while training, so the TEST net needs no rescaling (Caffe's only mode).
    In place allowed.
    """

    params = ("dropout_param",)
    template = "dropout_param { dropout_ratio: 0.5 }"

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        ratio = param.dropout_param.dropout_ratio
        if not 0 <= ratio < 1:
            yield f"dropout_ratio must be in [0, 1) (got {ratio:g})"

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.ratio = self.param.dropout_param.dropout_ratio
        if not 0 <= self.ratio < 1:
            raise self.error(f"dropout_ratio must be in [0, 1), got {self.ratio}")
        self.scale = 1.0 / (1.0 - self.ratio)
        self.multiplier: Any = None  # mask * scale of the last TRAIN forward

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        x = bottom[0].data
        if self.phase == caffe_pb2.TRAIN:
            uniform = rng.for_module(self.xp).random(x.shape, dtype=self.dtype)
            self.multiplier = (uniform < 1.0 - self.ratio).astype(self.dtype)
            self.multiplier *= self.scale
            self.xp.multiply(x, self.multiplier, out=top[0].data)
        elif top[0] is not bottom[0]:
            top[0].data[...] = x

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0]:
            return
        if self.phase == caffe_pb2.TRAIN:
            if self.multiplier is None:
                raise self.error("backward before any TRAIN forward: no dropout mask")
            self.xp.multiply(top[0].diff, self.multiplier, out=bottom[0].diff)
        elif top[0] is not bottom[0]:
            bottom[0].diff[...] = top[0].diff
