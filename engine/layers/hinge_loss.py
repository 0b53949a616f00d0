"""HingeLoss: the one-vs-all hinge loss of N score vectors, L1 or L2 norm.

Bottoms: scores x (N, ...) with dim = count / N classes per sample, and N integer labels.
With t[n, k] = -x[n, k] at the label and +x[n, k] elsewhere, and m = max(0, 1 + t):
    L1: loss = sum(m) / N      d loss / d x = +-sign(m) / N
    L2: loss = sum(m^2) / N    d loss / d x = +-2 m / N
where the sign is - at the label and + elsewhere.
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import LossLayer
from engine.layers.registry import register_layer
from engine.layers.softmax_loss import class_indices, per_sample
from proto import caffe_pb2

L1 = caffe_pb2.HingeLossParameter.L1


@register_layer("HingeLoss")
class HingeLossLayer(LossLayer):
    params = ("hinge_loss_param", "loss_param")

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.norm = self.param.hinge_loss_param.norm

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        super().reshape(bottom, top)
        self.num, self.dim = per_sample(self, bottom)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        label, _ = class_indices(self, bottom[1].data.reshape(self.num, 1), self.dim, None)
        self.sign = xp.where(xp.arange(self.dim).reshape(1, -1) == label, -1, 1).astype(self.dtype)
        self.margin = xp.maximum(0, 1 + self.sign * bottom[0].data.reshape(self.num, self.dim))
        total = self.margin.sum() if self.norm == L1 else xp.dot(self.margin.ravel(), self.margin.ravel())
        top[0].data[...] = total / self.num

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[1]:
            raise self.error("cannot backpropagate to the label input")
        if not propagate_down[0]:
            return
        xp = self.xp
        weight = top[0].diff.reshape(()) / self.num
        if self.norm == L1:
            diff = self.sign * xp.sign(self.margin) * weight
        else:
            diff = self.sign * self.margin * (2 * weight)
        bottom[0].diff[...] = diff.reshape(bottom[0].shape)
