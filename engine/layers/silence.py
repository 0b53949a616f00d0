"""Silence: swallows its bottoms so that no output is reported for them; no tops.

Gradient: the bottoms that want one get zeros (nothing downstream depends on them).
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("Silence")
class SilenceLayer(Layer):
    min_bottom = 1
    exact_num_top = 0
    family = "structure"

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing to shape."""

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing to compute."""

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        for blob, wanted in zip(bottom, propagate_down):
            if wanted:
                blob.diff[...] = 0
