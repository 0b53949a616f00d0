"""Concat: joins its bottoms along one axis.

Shapes: bottoms (..., C_i, ...) that agree on every other axis -> top (..., sum_i C_i, ...).
``concat_param.axis`` (negative counts from the end) or the legacy ``concat_dim`` (not both).
Gradient: each bottom receives its own slice of the top's diff. With a single bottom the top
shares the bottom's data and diff.
"""

from __future__ import annotations

from typing import Any

from engine.blob import Blob, shape_string
from engine.layers.base import Layer
from engine.layers.registry import register_layer


def along(axis: int, start: int, stop: int) -> tuple[Any, ...]:
    """An index selecting start:stop on ``axis`` and everything on the other axes."""
    return (slice(None),) * axis + (slice(start, stop),)


@register_layer("Concat")
class ConcatLayer(Layer):
    min_bottom = 1
    exact_num_top = 1
    family = "structure"
    params = ("concat_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.concat_param
        if p.HasField("axis") and p.HasField("concat_dim"):
            raise self.error("either axis or concat_dim should be specified, not both")

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.concat_param
        first = bottom[0]
        if p.HasField("concat_dim"):
            if p.concat_dim >= first.num_axes:
                raise self.error(
                    f"concat_dim {p.concat_dim} out of range for bottom {shape_string(first.shape)}"
                )
            self.axis = int(p.concat_dim)
        else:
            try:
                self.axis = first.canonical_axis_index(p.axis)
            except ValueError as exc:
                raise self.error(str(exc)) from None
        shape = list(first.shape)
        for i, blob in enumerate(bottom[1:], 1):
            others_match = blob.num_axes == first.num_axes and all(
                a == b for j, (a, b) in enumerate(zip(blob.shape, first.shape)) if j != self.axis
            )
            if not others_match:
                raise self.error(
                    f"all bottoms must have the same shape except on the concat axis {self.axis}; "
                    f"bottom 0 is {shape_string(first.shape)}, bottom {i} is {shape_string(blob.shape)}"
                )
            shape[self.axis] += blob.shape[self.axis]
        top[0].reshape(tuple(shape))
        if len(bottom) == 1:
            top[0].share_data(first)
            top[0].share_diff(first)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        if len(bottom) == 1:
            return
        offset = 0
        for blob in bottom:
            size = blob.shape[self.axis]
            top[0].data[along(self.axis, offset, offset + size)] = blob.data
            offset += size

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if len(bottom) == 1:
            return
        offset = 0
        for blob, wanted in zip(bottom, propagate_down):
            size = blob.shape[self.axis]
            if wanted:
                blob.diff[...] = top[0].diff[along(self.axis, offset, offset + size)]
            offset += size
