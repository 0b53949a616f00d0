"""Power, Exp and Log of an affine function of the input: same-shape neuron layers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.blob import Blob
from engine.layers._neuron import InputKeepingNeuronLayer
from engine.layers.base import NeuronLayer
from engine.layers.registry import register_layer


def _log_base(layer: NeuronLayer, base: float) -> float:
    """ln(base), with Caffe's -1 standing for e; the base must be positive."""
    if base == -1:
        return 1.0
    if base <= 0:
        raise layer.error(f"base must be strictly positive, got {base}")
    return math.log(base)


@register_layer("Power")
class PowerLayer(InputKeepingNeuronLayer):
    """y = (shift + scale * x) ^ power.

    dE/dx = dE/dy * scale * power * (shift + scale * x) ^ (power - 1), which Caffe evaluates as
    power * scale * y / (shift + scale * x); the constant power * scale when power is 1 or the
    product is 0; 2 * scale * (shift + scale * x) when power is 2; power * y / x when shift is 0.
    """

    params = ("power_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.power_param
        self.power, self.scale, self.shift = p.power, p.scale, p.shift
        self.diff_scale = self.power * self.scale

    def _affine(self, x: Any) -> Any:
        """A new array (an array even for a 0-D x, where numpy's product is a scalar)."""
        out = self.xp.asarray(x * self.scale) if self.scale != 1 else x.copy()
        if self.shift != 0:
            out += self.shift
        return out

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.keep_input(bottom, top)
        if self.diff_scale == 0:  # the input does not matter
            with np.errstate(invalid="ignore"):
                value = 1.0 if self.power == 0 else np.power(self.dtype.type(self.shift), self.power)
            top[0].data[...] = value
            return
        t = self._affine(bottom[0].data)
        if self.power != 1:
            self.xp.power(t, self.power, out=t)
        top[0].data[...] = t

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0]:
            return
        dy = top[0].diff
        if self.diff_scale == 0:
            bottom[0].diff[...] = 0
            return
        if self.power == 1:
            bottom[0].diff[...] = dy * self.diff_scale
            return
        x, y = self.input_data(bottom, top), top[0].data
        if self.power == 2:
            dydx = x * (self.diff_scale * self.scale)
            if self.shift != 0:
                dydx += self.diff_scale * self.shift
        elif self.shift == 0:
            dydx = y / x * self.power
        else:
            dydx = y / self._affine(x) * self.diff_scale
        bottom[0].diff[...] = dy * dydx


@register_layer("Exp")
class ExpLayer(NeuronLayer):
    """y = base ^ (shift + scale * x) (base -1: e), i.e. outer * exp(inner * x) with
    inner = ln(base) * scale and outer = base ^ shift. dE/dx = dE/dy * inner * y (from the top)."""

    params = ("exp_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.exp_param
        log_base = _log_base(self, p.base)
        self.inner_scale = log_base * p.scale
        try:
            self.outer_scale = 1.0 if p.shift == 0 else math.exp(log_base * p.shift)
        except OverflowError:  # Caffe's float pow/exp overflows to inf; so does the layer's output
            self.outer_scale = math.inf

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        x = bottom[0].data
        self.xp.exp(x * self.inner_scale if self.inner_scale != 1 else x, out=top[0].data)
        if self.outer_scale != 1:
            top[0].data *= self.outer_scale

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            bottom[0].diff[...] = top[0].diff * top[0].data * self.inner_scale


@register_layer("Log")
class LogLayer(InputKeepingNeuronLayer):
    """y = log_base(shift + scale * x) (base -1: natural log).

    dE/dx = dE/dy * scale / (ln(base) * (shift + scale * x)).
    """

    params = ("log_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.log_param
        log_base = _log_base(self, p.base)
        if log_base == 0:
            raise self.error("base 1 has no logarithm")
        self.base_scale = 1.0 / log_base
        self.scale, self.shift = p.scale, p.shift

    def _affine(self, x: Any) -> Any:
        """A new array (an array even for a 0-D x, where numpy's product is a scalar)."""
        out = self.xp.asarray(x * self.scale) if self.scale != 1 else x.copy()
        if self.shift != 0:
            out += self.shift
        return out

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.keep_input(bottom, top)
        t = self._affine(bottom[0].data)
        self.xp.log(t, out=t)
        if self.base_scale != 1:
            t *= self.base_scale
        top[0].data[...] = t

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            t = self._affine(self.input_data(bottom, top))
            bottom[0].diff[...] = top[0].diff * (self.scale * self.base_scale) / t
