"""Reshape: gives the bottom's values a new shape without copying them.

``reshape_param.shape`` replaces the bottom axes ``axis`` .. ``axis + num_axes - 1`` (num_axes -1:
through the last axis; a negative axis counts from the end, -1 meaning after the last axis).
In the new dims, 0 copies the bottom's dim at the same position and one -1 is inferred from the
element count. Shapes: count is kept. The top views the bottom's data and diff, so forward and
backward move nothing: dE/dx is dE/dy read in the bottom's shape.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from engine.blob import Blob, shape_string
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("Reshape")
class ReshapeLayer(Layer):
    exact_num_bottom = 1
    exact_num_top = 1
    family = "structure"
    params = ("reshape_param",)
    template = "reshape_param { shape { dim: 0 dim: -1 } }"  # keeps the batch axis, flattens the rest

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        dims = list(param.reshape_param.shape.dim)
        if any(d < -1 for d in dims):
            yield f"shape {dims} may hold only dims >= 0 and a single -1"
        if dims.count(-1) > 1:
            yield f"shape {dims} has several -1 dims; at most one can be inferred"

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        if top[0] is bottom[0]:
            raise self.error("Reshape does not allow in-place computation")
        dims = [int(d) for d in self.param.reshape_param.shape.dim]
        if any(d < -1 for d in dims):
            raise self.error(f"new shape {dims} may only hold dims >= 0 and a single -1")
        if dims.count(-1) > 1:
            raise self.error(f"new shape {dims} contains several -1 dims; at most one may be inferred")
        self.dims = dims

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        src = bottom[0]
        p = self.param.reshape_param
        n = src.num_axes
        start = p.axis if p.axis >= 0 else n + p.axis + 1
        if not 0 <= start <= n:
            raise self.error(f"axis {p.axis} out of range for a {n}-D bottom")
        if p.num_axes < -1:
            raise self.error(f"num_axes must be >= 0, or -1 for all; got {p.num_axes}")
        end = n if p.num_axes == -1 else start + p.num_axes
        if end > n:
            raise self.error(f"axis + num_axes = {end} is out of range for a {n}-D bottom")
        new = list(self.dims)
        for i, d in enumerate(new):
            if d == 0:
                if start + i >= n:
                    raise self.error(f"new shape {self.dims} has a 0 at index {i} but no bottom axis to copy")
                new[i] = src.shape[start + i]
        shape = [*src.shape[:start], *new, *src.shape[end:]]
        if -1 in new:
            known = src.count(0, start) * src.count(end)
            for d in new:
                known *= d if d != -1 else 1
            if known == 0 or src.count() % known:
                raise self.error(
                    f"bottom count ({src.count()}) must be divisible by the product of the given dims "
                    f"({known})"
                )
            shape[start + new.index(-1)] = src.count() // known
        shape_tuple = tuple(shape)
        if math.prod(shape_tuple) != src.count():
            raise self.error(
                f"output count must match input count: bottom {shape_string(src.shape)}, "
                f"new shape {shape_string(shape_tuple)}"
            )
        top[0].reshape(shape_tuple)
        top[0].share_data(src)
        top[0].share_diff(src)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing: the top views the bottom's data."""

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        """Nothing: the bottom's diff is the top's diff."""
