"""Flatten: merges the axes ``axis`` .. ``end_axis`` (inclusive; negative counts from the end).

Shapes: (d_0, ..., d_n) -> (d_0, ..., d_{axis-1}, prod(d_axis..d_end_axis), d_{end_axis+1}, ...);
the defaults (1, -1) give (N, C*H*W). The top views the bottom's data and diff (no copy), so
forward and backward move nothing: dE/dx is dE/dy read in the bottom's shape.
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("Flatten")
class FlattenLayer(Layer):
    exact_num_bottom = 1
    exact_num_top = 1
    family = "structure"
    params = ("flatten_param",)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        src = bottom[0]
        if top[0] is src:
            raise self.error("Flatten does not allow in-place computation")
        p = self.param.flatten_param
        try:
            start, end = src.canonical_axis_index(p.axis), src.canonical_axis_index(p.end_axis)
        except ValueError as exc:
            raise self.error(str(exc)) from None
        if end < start - 1:  # end_axis = axis - 1 is Caffe's empty product: a new axis of size 1
            raise self.error(
                f"end_axis {p.end_axis} comes before axis {p.axis} for a {src.num_axes}-D bottom"
            )
        top[0].reshape((*src.shape[:start], src.count(start, end + 1), *src.shape[end + 1 :]))
        top[0].share_data(src)
        top[0].share_diff(src)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing: the top views the bottom's data."""

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        """Nothing: the bottom's diff is the top's diff."""
