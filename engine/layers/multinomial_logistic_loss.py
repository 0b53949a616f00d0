"""MultinomialLogisticLoss: the negative log-likelihood of probabilities given as input.

Bottoms: probabilities p (N, C, ...) with dim = count / N entries per sample, and N integer labels
in [0, dim). With kLOG_THRESHOLD = 1e-20 guarding log(0):
    loss = -sum_n log(max(p[n, label_n], 1e-20)) / N
    d loss / d p[n, label_n] = -1 / (N max(p[n, label_n], 1e-20)), zero elsewhere
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import LossLayer
from engine.layers.registry import register_layer
from engine.layers.softmax_loss import class_indices, per_sample

LOG_THRESHOLD = 1e-20


@register_layer("MultinomialLogisticLoss")
class MultinomialLogisticLossLayer(LossLayer):
    params = ("loss_param",)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        super().reshape(bottom, top)
        self.num, self.dim = per_sample(self, bottom)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        labels = bottom[1].data.reshape(self.num, 1)
        self.label, _ = class_indices(self, labels, self.dim, None)
        picked = xp.take_along_axis(bottom[0].data.reshape(self.num, self.dim), self.label, axis=1)
        self.picked = xp.maximum(picked, self.dtype.type(LOG_THRESHOLD))
        top[0].data[...] = -xp.log(self.picked).sum() / self.num

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[1]:
            raise self.error("cannot backpropagate to the label input")
        if not propagate_down[0]:
            return
        xp = self.xp
        is_label = xp.arange(self.dim).reshape(1, -1) == self.label
        scale = -top[0].diff.reshape(()) / self.num
        diff = xp.where(is_label, scale / self.picked, 0)
        bottom[0].diff[...] = diff.reshape(bottom[0].shape)
