"""Reduction: SUM, ASUM (sum of |x|), SUMSQ (sum of x^2) or MEAN over all axes from ``axis`` on.

Shapes: (d_0, ..., d_n) -> (d_0, ..., d_{axis-1}); axis 0 (the default) gives a 0-axis scalar.
The result is scaled by ``coeff``. With D = prod(d_axis..d_n) and g = coeff * dE/dy:
dE/dx = g (SUM), g / D (MEAN), g * sign(x) (ASUM), 2 g x (SUMSQ).
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import Layer
from engine.layers.registry import register_layer
from proto import caffe_pb2

Op = caffe_pb2.ReductionParameter


@register_layer("Reduction")
class ReductionLayer(Layer):
    exact_num_bottom = 1
    exact_num_top = 1
    family = "structure"
    params = ("reduction_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.op = self.param.reduction_param.operation
        if self.op not in (Op.SUM, Op.ASUM, Op.SUMSQ, Op.MEAN):
            raise self.error(f"unknown reduction operation {self.op}")

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        src = bottom[0]
        p = self.param.reduction_param
        try:
            axis = src.canonical_axis_index(p.axis)
        except ValueError as exc:
            raise self.error(str(exc)) from None
        top[0].reshape(src.shape[:axis])
        self.num, self.dim = src.count(0, axis), src.count(axis)
        self.coeff = p.coeff / self.dim if self.op == Op.MEAN and self.dim else p.coeff

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        x = bottom[0].data.reshape(self.num, self.dim)
        if self.op == Op.ASUM:
            x = xp.abs(x)
        elif self.op == Op.SUMSQ:
            x = x * x
        out = x.sum(axis=1)
        if self.coeff != 1:
            out *= self.coeff
        top[0].data[...] = out.reshape(top[0].shape)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0]:
            return
        xp = self.xp
        g = top[0].diff.reshape(self.num, 1) * self.coeff
        diff = bottom[0].diff.reshape(self.num, self.dim)
        if self.op in (Op.SUM, Op.MEAN):
            diff[...] = g
        elif self.op == Op.ASUM:
            xp.multiply(xp.sign(bottom[0].data.reshape(self.num, self.dim)), g, out=diff)
        else:
            xp.multiply(bottom[0].data.reshape(self.num, self.dim), 2 * g, out=diff)
