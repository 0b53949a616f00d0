"""Tile: repeats the bottom's block from ``axis`` onwards ``tiles`` times along ``axis``.

Shapes: (d_0, ..., d_axis, ..., d_n) -> (d_0, ..., tiles * d_axis, ..., d_n); the top holds, for
each index of the leading axes, ``tiles`` copies of the whole trailing block (as numpy.tile).
Gradient: dE/dx = the sum of dE/dy over the copies.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine.blob import Blob
from engine.layers import facts
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("Tile")
class TileLayer(Layer):
    exact_num_bottom = 1
    exact_num_top = 1
    family = "structure"
    params = ("tile_param",)
    template = "tile_param { tiles: 2 }"

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        return facts.positive("tiles", param.tile_param.tiles)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.tile_param
        if not p.HasField("tiles"):
            raise self.error("the number of tiles must be specified (tile_param.tiles)")
        if p.tiles <= 0:
            raise self.error(f"the number of tiles must be positive, got {p.tiles}")
        self.tiles = p.tiles

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        src = bottom[0]
        try:
            self.axis = src.canonical_axis_index(self.param.tile_param.axis)
        except ValueError as exc:
            raise self.error(str(exc)) from None
        shape = list(src.shape)
        shape[self.axis] *= self.tiles
        top[0].reshape(tuple(shape))
        self.outer, self.inner = src.count(0, self.axis), src.count(self.axis)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        top[0].data.reshape(self.outer, self.tiles, self.inner)[...] = bottom[0].data.reshape(
            self.outer, 1, self.inner
        )

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            summed = top[0].diff.reshape(self.outer, self.tiles, self.inner).sum(axis=1)
            bottom[0].diff[...] = summed.reshape(bottom[0].shape)
