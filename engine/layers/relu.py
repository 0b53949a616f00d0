"""ReLU and its piecewise relatives ELU and Clip: one bottom, one top of the same shape."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np

from engine import backend, parallel
from engine.blob import Blob
from engine.layers._neuron import InputKeepingNeuronLayer, step
from engine.layers.base import NeuronLayer
from engine.layers.registry import register_layer


@register_layer("ReLU")
class ReLULayer(NeuronLayer):
    """y = max(x, 0) + negative_slope * min(x, 0), any shape, in place allowed.

    dE/dx = dE/dy where x > 0, negative_slope * dE/dy elsewhere (Caffe takes the slope at x = 0).
    In place, the sign of y stands for the sign of x (true for negative_slope >= 0, as in Caffe).
    """

    params = ("relu_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.negative_slope = self.param.relu_param.negative_slope
        self.workspace = backend.Workspace()

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp, x, y = self.xp, bottom[0].data, top[0].data
        if self.negative_slope == 0 and blocked(xp, x, y):
            # numpy's maximum against a scalar takes a slow loop; against an array of zeros that
            # stays in the cache, its fast one: a cache-sized block at a time, on the pool's threads.
            flat_x, flat_y = x.reshape(-1), y.reshape(-1)
            block = min(parallel.block_items(x.itemsize), x.size)
            zeros = self.workspace.get("zeros", (block,), x.dtype, xp, zeros=True)  # only read

            def values(start: int, stop: int) -> None:
                xp.maximum(flat_x[start:stop], zeros[: stop - start], out=flat_y[start:stop])

            parallel.run_blocks(values, x.size, xp, 1, x.itemsize)
        elif self.negative_slope == 0:
            xp.maximum(x, 0, out=y)
        else:
            negative = xp.minimum(x, 0)
            negative *= self.negative_slope
            xp.add(xp.maximum(x, 0), negative, out=y)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0]:
            return
        xp, x, dy, dx = self.xp, bottom[0].data, top[0].diff, bottom[0].diff
        if self.negative_slope == 0 and blocked(xp, x, dy, dx):
            # The mask x > 0 made and used a block at a time in this thread's scratch, in the cache,
            # not a whole blob of booleans written out and read back; blocks on the pool's threads.
            flat_x, flat_dy, flat_dx = x.reshape(-1), dy.reshape(-1), dx.reshape(-1)

            def values(start: int, stop: int) -> None:
                mask = backend.scratch("relu_mask", (stop - start,), bool)
                xp.greater(flat_x[start:stop], 0, out=mask)
                xp.multiply(flat_dy[start:stop], mask, out=flat_dx[start:stop])

            parallel.run_blocks(values, x.size, xp, 1, 1)
            return
        slope = x > 0 if self.negative_slope == 0 else step(x > 0, self.negative_slope, self.dtype)
        xp.multiply(dy, slope, out=dx)


def blocked(xp: ModuleType, *arrays: Any) -> bool:
    """Whether the CPU's blocked passes apply: numpy arrays, each contiguous (flat views of them)."""
    return xp is np and all(a.flags.c_contiguous for a in arrays)


@register_layer("ELU")
class ELULayer(NeuronLayer):
    """y = x for x > 0, alpha * (exp(x) - 1) otherwise; any shape, in place allowed.

    dE/dx = dE/dy for x > 0, dE/dy * (y + alpha) otherwise (the derivative read off the top).
    """

    params = ("elu_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.alpha = self.param.elu_param.alpha

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp, x = self.xp, bottom[0].data
        negative = xp.expm1(xp.minimum(x, 0))
        negative *= self.alpha
        xp.add(xp.maximum(x, 0), negative, out=top[0].data)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            x = bottom[0].data
            slope = step(x > 0, top[0].data + self.alpha, self.dtype)
            self.xp.multiply(top[0].diff, slope, out=bottom[0].diff)


@register_layer("Clip")
class ClipLayer(InputKeepingNeuronLayer):
    """y = max(min, min(x, max)); any shape, in place allowed.

    dE/dx = dE/dy where min <= x <= max (both ends included, as Caffe), 0 elsewhere.
    """

    params = ("clip_param",)
    template = "clip_param { min: 0 max: 6 }"  # ReLU6

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        p = param.clip_param
        if param.HasField("clip_param") and p.min > p.max:
            yield f"clip min {p.min:g} is above max {p.max:g}"

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.clip_param
        if not (self.param.HasField("clip_param") and p.HasField("min") and p.HasField("max")):
            raise self.error("clip_param needs both min and max")
        self.low, self.high = p.min, p.max

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.keep_input(bottom, top)
        xp = self.xp
        xp.maximum(xp.minimum(bottom[0].data, self.high), self.low, out=top[0].data)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            x = self.input_data(bottom, top)
            inside = (x >= self.low) & (x <= self.high)
            self.xp.multiply(top[0].diff, inside, out=bottom[0].diff)
