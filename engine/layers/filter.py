"""Filter: keeps the items (first-axis entries) of K blobs whose selector entry is nonzero.

Bottoms: K >= 1 blobs to filter, each (N, ...), then the selector (N,) or (N, 1, ...): every axis
after the first of size 1. Tops: K blobs (M, ...), M the number of nonzero selector entries, item
m of top k being item i_m of bottom k for the selected indices i_0 < i_1 < ... (NaN counts as
nonzero, as in C++). With nothing selected the tops have 0 items (M = 0). As in Caffe, the tops get
N items at setup (the selector's values are not known yet) and M from the first forward on, since
reshape reads the selector.
Gradient: dE/dx_k[i_m] = dE/dy_k[m]; items not selected get 0. The selector gets no gradient: asking
for one is an error, and force_backward does not ask.
"""

from __future__ import annotations

from typing import Any

from engine.blob import Blob, shape_string
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("Filter")
class FilterLayer(Layer):
    min_bottom = 2
    min_top = 1
    family = "structure"

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        if len(top) != len(bottom) - 1:
            raise self.error(
                f"needs one top per filtered bottom (the last bottom is the selector): "
                f"{len(bottom)} bottoms, {len(top)} tops"
            )
        self.first_reshape = True
        self.selector_index = len(bottom) - 1
        self.indices: Any = None

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        selector = bottom[-1]
        if selector.num_axes < 1 or any(d != 1 for d in selector.shape[1:]):
            raise self.error(
                f"the selector (last bottom) must be (N,) or have singleton axes after the first, "
                f"got {shape_string(selector.shape)}"
            )
        for i, blob in enumerate(bottom[:-1]):
            if blob.num_axes < 1 or blob.shape[0] != selector.shape[0]:
                raise self.error(
                    f"bottom {i} ({shape_string(blob.shape)}) must have the selector's first dimension "
                    f"({selector.shape[0]})"
                )
        xp = self.xp
        # One device sync: the number of selected items is a shape.
        self.indices = xp.flatnonzero(selector.data.reshape(-1))
        items = bottom[0].shape[0] if self.first_reshape else int(self.indices.size)
        self.first_reshape = False
        for blob, source in zip(top, bottom):
            blob.reshape((items, *source.shape[1:]))

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        if top[0].shape[0] != self.indices.size:  # right after setup: Caffe's Forward reshapes first
            self.reshape(bottom, top)
        for blob, source in zip(top, bottom):
            self.xp.take(source.data, self.indices, axis=0, out=blob.data)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[-1]:
            raise self.error("cannot backpropagate to the selector (last bottom)")
        for blob, source, wanted in zip(top, bottom, propagate_down):
            if wanted:
                source.diff[...] = 0
                source.diff[self.indices] = blob.diff

    def allow_force_backward(self, bottom_index: int) -> bool:
        return bottom_index != self.selector_index
