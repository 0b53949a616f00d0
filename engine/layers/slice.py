"""Slice: cuts its bottom into pieces along one axis (the inverse of Concat).

Shapes: bottom (..., C, ...) -> tops (..., C_i, ...) with sum_i C_i = C. The cuts are
``slice_param.slice_point`` (strictly increasing, one fewer than the tops), or, without them,
C split evenly over the tops. ``axis`` (negative counts from the end) or the legacy
``slice_dim`` (not both). Gradient: each top's diff is copied into its part of the bottom's diff.
With a single top, the top shares the bottom's data and diff.
"""

from __future__ import annotations

from engine.blob import Blob, shape_string
from engine.layers.base import Layer
from engine.layers.concat import along
from engine.layers.registry import register_layer


@register_layer("Slice")
class SliceLayer(Layer):
    exact_num_bottom = 1
    min_top = 1
    family = "structure"
    params = ("slice_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.slice_param
        if p.HasField("axis") and p.HasField("slice_dim"):
            raise self.error("either axis or slice_dim should be specified, not both")

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.slice_param
        src = bottom[0]
        if p.HasField("slice_dim"):
            if p.slice_dim >= src.num_axes:
                raise self.error(f"slice_dim {p.slice_dim} out of range for bottom {shape_string(src.shape)}")
            self.axis = int(p.slice_dim)
        else:
            try:
                self.axis = src.canonical_axis_index(p.axis)
            except ValueError as exc:
                raise self.error(str(exc)) from None
        n, total = len(top), src.shape[self.axis]
        points = list(p.slice_point)
        if points:
            if len(points) != n - 1:
                raise self.error(f"{len(points)} slice points for {n} tops; give one fewer point than tops")
            if n > total:
                raise self.error(f"cannot cut axis {self.axis} of size {total} into {n} tops")
            bounds = [0, *points, total]
            if any(a >= b for a, b in zip(bounds, bounds[1:])):
                raise self.error(
                    f"slice points {points} must increase strictly within (0, {total}) on axis {self.axis}"
                )
            sizes = [b - a for a, b in zip(bounds, bounds[1:])]
        else:
            if total % n:
                raise self.error(
                    f"the number of tops ({n}) should evenly divide the slice axis {self.axis} (size {total})"
                )
            sizes = [total // n] * n
        shape = list(src.shape)
        for blob, size in zip(top, sizes):
            shape[self.axis] = size
            blob.reshape(tuple(shape))
        self.sizes = sizes
        if n == 1:
            top[0].share_data(src)
            top[0].share_diff(src)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        if len(top) == 1:
            return
        offset = 0
        for blob, size in zip(top, self.sizes):
            blob.data[...] = bottom[0].data[along(self.axis, offset, offset + size)]
            offset += size

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0] or len(top) == 1:
            return
        offset = 0
        for blob, size in zip(top, self.sizes):
            bottom[0].diff[along(self.axis, offset, offset + size)] = blob.diff
            offset += size
