"""Parameter: exposes one learnable blob as a top, so other layers can take it as a bottom.

Shapes: no bottom -> top of ``parameter_param.shape``. The blob starts at zero (or as loaded
from the weights); the top views its data and diff, so the gradient its consumers write into
the top lands in the parameter's diff.
"""

from __future__ import annotations

from typing import Any

from engine.blob import Blob, as_shape, shape_string
from engine.layers import facts
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("Parameter")
class ParameterLayer(Layer):
    exact_num_bottom = 0
    exact_num_top = 1
    family = "structure"
    params = ("parameter_param",)
    template = "parameter_param { shape { dim: 1 dim: 64 } }"

    @classmethod
    def learnable_blobs(cls, param: Any) -> list[facts.ParamBlob]:
        return [facts.ParamBlob("value", None, note="starts at 0 (Parameter has no filler)")]

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        shape = as_shape(self.param.parameter_param.shape)
        if not self.blobs:
            self.blobs = [self.new_blob(shape)]
        top[0].reshape(shape)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        if top[0].count() != self.blobs[0].count():
            raise self.error(
                f"the parameter blob ({shape_string(self.blobs[0].shape)}) does not fit the top "
                f"({shape_string(top[0].shape)})"
            )
        top[0].share_data(self.blobs[0])
        top[0].share_diff(self.blobs[0])

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing: the top views the parameter."""

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        """Nothing: the consumers' gradient is already in the parameter's diff."""
