"""Smooth and step activations: Sigmoid, TanH, Swish, BNLL, AbsVal, Threshold (same-shape neurons)."""

from __future__ import annotations

from typing import Any

from engine.blob import Blob
from engine.layers._neuron import InputKeepingNeuronLayer
from engine.layers.base import NeuronLayer
from engine.layers.registry import register_layer

BNLL_THRESHOLD = 50.0  # Caffe's kBNLL_THRESHOLD: the gradient's exp() is taken of min(x, 50)


def _sigmoid(xp: Any, x: Any, out: Any = None) -> Any:
    """1 / (1 + exp(-x)) written as Caffe writes it, 0.5 * tanh(x / 2) + 0.5: no overflow."""
    out = xp.tanh(x * 0.5, out=out)
    out *= 0.5
    out += 0.5
    return out


@register_layer("Sigmoid")
class SigmoidLayer(NeuronLayer):
    """y = 1 / (1 + exp(-x)); dE/dx = dE/dy * y * (1 - y), from the top, so in place is fine."""

    params = ("sigmoid_param",)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        _sigmoid(self.xp, bottom[0].data, out=top[0].data)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            y = top[0].data
            slope = 1 - y
            slope *= y
            self.xp.multiply(top[0].diff, slope, out=bottom[0].diff)


@register_layer("TanH")
class TanHLayer(NeuronLayer):
    """y = tanh(x); dE/dx = dE/dy * (1 - y^2), from the top, so in place is fine."""

    params = ("tanh_param",)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.xp.tanh(bottom[0].data, out=top[0].data)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            y = top[0].data
            self.xp.multiply(top[0].diff, 1 - y * y, out=bottom[0].diff)  # an expression: 0-D safe


@register_layer("Swish")
class SwishLayer(NeuronLayer):
    """y = x * s with s = sigmoid(beta * x).

    dE/dx = dE/dy * (beta * y + s * (1 - beta * y)); s is kept from forward, so in place is fine.
    """

    params = ("swish_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.beta = self.param.swish_param.beta

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        x = bottom[0].data
        self.sigmoid = _sigmoid(self.xp, x * self.beta)
        self.xp.multiply(x, self.sigmoid, out=top[0].data)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            beta_y = top[0].data * self.beta
            bottom[0].diff[...] = top[0].diff * (beta_y + self.sigmoid * (1 - beta_y))


@register_layer("BNLL")
class BNLLLayer(InputKeepingNeuronLayer):
    """y = log(1 + exp(x)) ("binomial normal log likelihood"), computed without overflow.

    dE/dx = dE/dy * e / (1 + e) with e = exp(min(x, 50)), as Caffe.
    """

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.keep_input(bottom, top)
        xp, x = self.xp, bottom[0].data
        top[0].data[...] = xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            e = self.xp.exp(self.xp.minimum(self.input_data(bottom, top), BNLL_THRESHOLD))
            bottom[0].diff[...] = top[0].diff * e / (e + 1)


@register_layer("AbsVal")
class AbsValLayer(NeuronLayer):
    """y = |x|; dE/dx = dE/dy * sign(x) (0 at x = 0). Not in place: Caffe refuses it."""

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        if top[0] is bottom[0]:
            raise self.error("AbsVal does not allow in-place computation")

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.xp.abs(bottom[0].data, out=top[0].data)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            bottom[0].diff[...] = top[0].diff * self.xp.sign(bottom[0].data)


@register_layer("Threshold")
class ThresholdLayer(NeuronLayer):
    """y = 1 where x > threshold, else 0. No gradient (Caffe's backward is not implemented)."""

    params = ("threshold_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.threshold = self.param.threshold_param.threshold

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        top[0].data[...] = bottom[0].data > self.threshold
