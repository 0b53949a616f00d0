"""ArgMax: the indices (or values) of the ``top_k`` largest entries.

With ``axis``: bottom (..., d_axis, ...) -> top (..., top_k, ...) holding the indices along that
axis, or the values themselves when ``out_max_val`` is set.
Without ``axis`` each sample's flattened features (all axes after 0) are searched: bottom (N, ...)
-> top (N, 1, top_k) with the indices, or (N, 2, top_k) with indices then values when
``out_max_val`` is set (padded with unit axes to the bottom's rank when that exceeds 3).
Among equal values the higher index ranks first, as Caffe's sort of (value, index) pairs does.
No gradient.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine.blob import Blob
from engine.layers import facts
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("ArgMax")
class ArgMaxLayer(Layer):
    exact_num_bottom = 1
    exact_num_top = 1
    family = "loss"
    params = ("argmax_param",)

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        return facts.positive("top_k", param.argmax_param.top_k)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.argmax_param
        self.out_max_val, self.top_k, self.has_axis = p.out_max_val, p.top_k, p.HasField("axis")
        if self.top_k < 1:
            raise self.error("top_k must not be less than 1")

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        src = bottom[0]
        if self.has_axis:
            try:
                self.axis = src.canonical_axis_index(self.param.argmax_param.axis)
            except ValueError as exc:
                raise self.error(str(exc)) from None
            if self.top_k > src.shape[self.axis]:
                raise self.error(
                    f"top_k ({self.top_k}) must not exceed the size of axis {self.axis} "
                    f"({src.shape[self.axis]})"
                )
            shape = list(src.shape)
            shape[self.axis] = self.top_k
        else:
            if src.num_axes < 1 or self.top_k > src.count(1):
                raise self.error(
                    f"top_k ({self.top_k}) must not exceed the flattened size of a sample ({src.count(1)})"
                )
            shape = [1] * max(3, src.num_axes)
            shape[0], shape[1], shape[2] = src.shape[0], 2 if self.out_max_val else 1, self.top_k
        top[0].reshape(tuple(shape))

    def _top_k(self, x: Any) -> tuple[Any, Any]:
        """Indices and values of the top_k largest entries along x's last axis, best first."""
        xp = self.xp
        last = x.shape[-1] - 1
        flipped = x[..., ::-1]  # so that ties between equal values go to the higher index
        if self.top_k == 1:
            order = xp.argmax(flipped, axis=-1)[..., None]
        else:
            order = xp.argsort(-flipped, axis=-1, kind="stable")[..., : self.top_k]
        return last - order, xp.take_along_axis(flipped, order, axis=-1)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        data = bottom[0].data
        if self.has_axis:
            indices, values = self._top_k(xp.moveaxis(data, self.axis, -1))
            out = values if self.out_max_val else indices
            top[0].data[...] = xp.moveaxis(out, -1, self.axis)
            return
        indices, values = self._top_k(data.reshape(data.shape[0], bottom[0].count(1)))
        rows = top[0].data.reshape(data.shape[0], 2 if self.out_max_val else 1, self.top_k)
        rows[:, 0] = indices
        if self.out_max_val:
            rows[:, 1] = values
