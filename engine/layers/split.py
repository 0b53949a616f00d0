"""Split: one bottom feeding N consumers (the net inserts these where a blob has several readers).

Shapes: bottom (any) -> N tops of the same shape, each viewing the bottom's data (no copy).
Gradient: dE/dx = sum_i dE/dy_i. The tops must be distinct from the bottom (no in-place).
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("Split")
class SplitLayer(Layer):
    exact_num_bottom = 1
    min_top = 1
    family = "structure"

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        for i, blob in enumerate(top):
            if blob is bottom[0]:
                raise self.error(f"top {i} is the bottom blob: Split does not allow in-place computation")
            blob.reshape(bottom[0].shape)
            blob.share_data(bottom[0])

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing: the tops already view the bottom's data."""

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0]:
            return
        diff = bottom[0].diff
        if len(top) == 1:
            diff[...] = top[0].diff
            return
        self.xp.add(top[0].diff, top[1].diff, out=diff)
        for blob in top[2:]:
            diff += blob.diff
