"""Embed: a lookup table, an InnerProduct on one-hot inputs given by their hot index.

Shapes: bottom (...) of integer ids in [0, input_dim) -> top (..., num_output).
Params: weight W (input_dim, num_output) (transposed from InnerProduct's, one row per id) and,
with ``bias_term`` (the default), b (num_output,). y[..., :] = W[x[...]] + b.
Gradient: dE/dW[i] = sum over the positions holding id i of dE/dy; dE/db = sum of dE/dy. The ids
get no gradient: asking for one is an error, and force_backward does not ask.
"""

from __future__ import annotations

from typing import Any

from engine.backend import scatter_add
from engine.blob import Blob, shape_string
from engine.fillers import get_filler
from engine.layers import facts
from engine.layers.base import Layer, Shape
from engine.layers.registry import register_layer


@register_layer("Embed")
class EmbedLayer(Layer):
    exact_num_bottom = 1
    exact_num_top = 1
    family = "vision"
    params = ("embed_param",)
    template = (
        'embed_param { num_output: 32 input_dim: 1000 weight_filler { type: "xavier" } '
        'bias_filler { type: "constant" } }'
    )

    @classmethod
    def learnable_blobs(cls, param: Any) -> list[facts.ParamBlob]:
        return facts.weights_and_bias("embed_param", param.embed_param.bias_term)

    @classmethod
    def static_problems(cls, param: Any) -> Any:
        yield from facts.positive("num_output", param.embed_param.num_output)
        yield from facts.positive("input_dim", param.embed_param.input_dim)

    def param_shapes(self, bottom: list[Blob]) -> list[Shape]:
        p = self.param.embed_param
        return [(p.input_dim, p.num_output)] + [(p.num_output,)] * p.bias_term

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.embed_param
        self.num_output, self.input_dim, self.bias_term = p.num_output, p.input_dim, p.bias_term
        if self.num_output <= 0:
            raise self.error("num_output must be positive")
        if self.input_dim <= 0:
            raise self.error("input_dim must be positive")
        shapes = self.param_shapes(bottom)
        if not self.blobs:
            fillers = (p.weight_filler, p.bias_filler)
            self.blobs = [self.new_blob(shape) for shape in shapes]
            for blob, filler in zip(self.blobs, fillers):
                get_filler(filler).fill(blob)
        elif [b.shape for b in self.blobs] != shapes:
            raise self.error(
                f"loaded params {self.describe_shapes(self.blobs)} do not fit input_dim {self.input_dim}, "
                f"num_output {self.num_output}, bias_term {self.bias_term}"
            )

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        top[0].reshape((*bottom[0].shape, self.num_output))

    def _ids(self, bottom: Blob) -> Any:
        """The ids as integers, refusing values that are fractional or out of [0, input_dim)."""
        xp = self.xp
        x = bottom.data.reshape(-1)
        ids = x.astype(xp.int64)
        if bool(xp.any((ids != x) | (ids < 0) | (ids >= self.input_dim))):  # one device sync
            raise self.error(
                f"inputs must be integer ids in [0, {self.input_dim}); bottom {shape_string(bottom.shape)} "
                "holds other values"
            )
        return ids

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        out = top[0].data.reshape(-1, self.num_output)
        self.xp.take(self.blobs[0].data, self._ids(bottom[0]), axis=0, out=out)
        if self.bias_term:
            out += self.blobs[1].data

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            raise self.error("cannot backpropagate to the input ids")
        dy = top[0].diff.reshape(-1, self.num_output)
        if self.param_propagate_down[0]:
            scatter_add(self.blobs[0].diff, self._ids(bottom[0]), dy)
        if self.bias_term and self.param_propagate_down[1]:
            self.blobs[1].diff += dy.sum(axis=0)

    def allow_force_backward(self, bottom_index: int) -> bool:
        return False
