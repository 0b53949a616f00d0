"""SigmoidCrossEntropyLoss: cross-entropy between sigmoid(x) and targets t in [0, 1].

Bottoms: scores x and targets t of the same count (first axis N). Computed stably as
    loss_i = max(x, 0) - x t + log(1 + exp(-|x|)),   loss = sum_valid loss_i / normalizer
    d loss / d x = (sigmoid(x) - t) / normalizer, zero where int(t) == ignore_label
The normalizer follows loss_param (FULL: count, VALID: non-ignored targets, BATCH_SIZE: N, NONE: 1).
Unlike SoftmaxWithLoss, an unset normalization (and unset legacy normalize) means BATCH_SIZE.
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import LossLayer
from engine.layers.registry import register_layer
from engine.layers.softmax_loss import Mode, get_normalizer, normalization_mode


@register_layer("SigmoidCrossEntropyLoss")
class SigmoidCrossEntropyLossLayer(LossLayer):
    params = ("loss_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        loss_param = self.param.loss_param
        self.ignore_label = loss_param.ignore_label if loss_param.HasField("ignore_label") else None
        self.normalization = normalization_mode(loss_param, default=Mode.BATCH_SIZE)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        super().reshape(bottom, top)
        if bottom[0].count() != bottom[1].count():
            raise self.error(
                f"scores and targets must have the same count; got {self.describe_shapes(bottom)}"
            )
        self.outer = bottom[0].shape[0]
        self.inner = bottom[0].count(1)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        x = bottom[0].data
        target = bottom[1].data.reshape(x.shape)
        loss = xp.maximum(x, 0) - x * target + xp.log1p(xp.exp(-xp.abs(x)))
        if self.ignore_label is None:
            self.valid = None
            valid_count = xp.asarray(x.size, self.dtype)
        else:
            self.valid = xp.trunc(target) != self.ignore_label  # Caffe compares static_cast<int>(t)
            loss *= self.valid
            valid_count = self.valid.sum().astype(self.dtype)
        self.normalizer = get_normalizer(self.normalization, self.outer, self.inner, valid_count)
        top[0].data[...] = loss.sum() / self.normalizer

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[1]:
            raise self.error("cannot backpropagate to the target input")
        if not propagate_down[0]:
            return
        xp = self.xp
        x = bottom[0].data
        diff = 0.5 * xp.tanh(0.5 * x) + 0.5 - bottom[1].data.reshape(x.shape)
        if self.valid is not None:
            diff *= self.valid
        diff *= top[0].diff.reshape(()) / self.normalizer
        bottom[0].diff[...] = diff
