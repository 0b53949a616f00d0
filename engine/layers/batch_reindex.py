"""BatchReindex: selects, reorders or repeats the samples of a batch.

Shapes: bottom 0 (N, ...) and bottom 1 (M,) of indices in [0, N) -> top (M, ...), y[m] = x[i[m]].
Gradient: dE/dx[n] = sum over the m with i[m] = n of dE/dy[m] (zero for unselected samples).
The indices get no gradient: asking for one is an error, and force_backward does not ask.
"""

from __future__ import annotations

from typing import Any

from engine.backend import scatter_add
from engine.blob import Blob, shape_string
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("BatchReindex")
class BatchReindexLayer(Layer):
    exact_num_bottom = 2
    exact_num_top = 1
    family = "structure"

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        if bottom[1].num_axes != 1:
            raise self.error(
                f"the indices (bottom 1) must have one axis, got {shape_string(bottom[1].shape)}"
            )
        if bottom[0].num_axes < 1:
            raise self.error("the data (bottom 0) must have at least one axis")
        top[0].reshape((bottom[1].shape[0], *bottom[0].shape[1:]))

    def _indices(self, bottom: list[Blob]) -> Any:
        xp = self.xp
        x = bottom[1].data
        if bool(xp.any((x < 0) | (x >= bottom[0].shape[0]))):  # one device sync
            raise self.error(f"indices must lie in [0, {bottom[0].shape[0]}), the batch size of bottom 0")
        return x.astype(xp.int64)  # truncated, as Caffe's cast to int

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.xp.take(bottom[0].data, self._indices(bottom), axis=0, out=top[0].data)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[1]:
            raise self.error("cannot backpropagate to the indices (bottom 1)")
        if propagate_down[0]:
            bottom[0].diff[...] = 0
            scatter_add(bottom[0].diff, self._indices(bottom), top[0].diff)

    def allow_force_backward(self, bottom_index: int) -> bool:
        return bottom_index != 1
