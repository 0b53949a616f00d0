"""Bias: adds a blob broadcast over the leading and trailing axes of the input.

The geometry helpers here serve Scale too: the operand's axes line up with the input's axes
``axis .. axis + operand.num_axes``, so the input is seen as (outer, operand.count(), inner).
"""

from __future__ import annotations

from typing import Any

from engine.blob import Blob, shape_string
from engine.fillers import get_filler
from engine.layers import facts
from engine.layers.base import Layer
from engine.layers.registry import register_layer


def canonical_axis(layer: Layer, blob: Blob, axis: int) -> int:
    try:
        return blob.canonical_axis_index(axis)
    except ValueError as exc:
        raise layer.error(str(exc)) from None


def learned_shape(layer: Layer, bottom: Blob, axis: int, num_axes: int, what: str) -> tuple[int, ...]:
    """The shape of a learned operand: ``num_axes`` axes of the input from ``axis`` (-1: to the end)."""
    start = canonical_axis(layer, bottom, axis)
    if num_axes < -1:
        raise layer.error(
            f"num_axes must be non-negative, or -1 to extend to the end of bottom[0]; got {num_axes}"
        )
    if num_axes >= 0 and bottom.num_axes < start + num_axes:
        raise layer.error(
            f"{what} blob's shape extends past bottom[0]'s shape ({shape_string(bottom.shape)}) "
            f"when applied starting with bottom[0] axis = {start} over {num_axes} axes"
        )
    return bottom.shape[start:] if num_axes == -1 else bottom.shape[start : start + num_axes]


def broadcast_dims(layer: Layer, bottom: Blob, operand: Blob, axis: int, what: str) -> tuple[int, int, int]:
    """(outer, operand count, inner) for applying ``operand`` to ``bottom`` from ``axis`` on.

    A scalar operand (0 axes) ignores ``axis``, as in Caffe.
    """
    start = 0 if operand.num_axes == 0 else canonical_axis(layer, bottom, axis)
    if bottom.num_axes < start + operand.num_axes or (
        bottom.shape[start : start + operand.num_axes] != operand.shape
    ):
        raise layer.error(
            f"{what} shape {shape_string(operand.shape)} does not match bottom[0] shape "
            f"{shape_string(bottom.shape)} from axis {start} on"
        )
    return bottom.count(0, start), operand.count(), bottom.count(start + operand.num_axes)


@register_layer("Bias")
class BiasLayer(Layer):
    """y = x + b, b broadcast: x is (outer, D, inner) with b of count D on the middle axes.

    b is bottom[1], or blobs[0] learned (shape from axis/num_axes, default filler constant 0).
    dE/dx = dE/dy; dE/db = sum of dE/dy over outer and inner. In place allowed.
    """

    min_bottom = 1
    max_bottom = 2
    exact_num_top = 1
    family = "normalisation"
    params = ("bias_param",)

    @classmethod
    def learnable_blobs(cls, param: Any) -> list[facts.ParamBlob]:
        if len(param.bottom) >= 2:  # a second bottom supplies the bias
            return []
        return [facts.ParamBlob("bias", "bias_param.filler", facts.constant())]

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.bias_param
        if len(bottom) == 1 and not self.blobs:
            blob = self.new_blob(learned_shape(self, bottom[0], p.axis, p.num_axes, "bias"))
            get_filler(p.filler).fill(blob)  # an unset filler is constant 0
            self.blobs = [blob]

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        bias = bottom[1] if len(bottom) > 1 else self.blobs[0]
        self.dims = broadcast_dims(self, bottom[0], bias, self.param.bias_param.axis, "bias")
        if top[0] is not bottom[0]:
            top[0].reshape(bottom[0].shape)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        bias = bottom[1] if len(bottom) > 1 else self.blobs[0]
        x = bottom[0].data.reshape(self.dims)
        top[0].data[...] = (x + bias.data.reshape(1, -1, 1)).reshape(bottom[0].shape)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0] and top[0] is not bottom[0]:
            bottom[0].diff[...] = top[0].diff
        learned = len(bottom) == 1
        if (learned and self.param_propagate_down[0]) or (not learned and propagate_down[1]):
            bias = self.blobs[0] if learned else bottom[1]
            grad = top[0].diff.reshape(self.dims).sum(axis=(0, 2)).reshape(bias.shape)
            if learned:
                bias.diff += grad
            else:
                bias.diff[...] = grad
