"""Accuracy: the fraction of samples whose label is among the top_k scores (no gradient).

Scores (outer, C, inner) around ``accuracy_param.axis``; labels: outer * inner integers in [0, C)
(positions labelled ``ignore_label`` are skipped). Ties count against the label, as in Caffe: a
sample is correct when fewer than top_k *other* classes score >= the label's score.

Tops: the accuracy (a scalar; 0 when every label is ignored) and, optionally, the per-class
accuracy of shape (C,), 0 for classes with no sample.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine.blob import Blob
from engine.layers import facts
from engine.layers.base import Layer
from engine.layers.registry import register_layer
from engine.layers.softmax_loss import class_geometry, class_indices


@register_layer("Accuracy")
class AccuracyLayer(Layer):
    exact_num_bottom = 2
    min_top = 1
    max_top = 2
    family = "loss"
    params = ("accuracy_param",)

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        return facts.positive("top_k", param.accuracy_param.top_k)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        param = self.param.accuracy_param
        self.top_k = param.top_k
        self.ignore_label = param.ignore_label if param.HasField("ignore_label") else None

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.outer, self.channels, self.inner = class_geometry(self, bottom, self.param.accuracy_param.axis)
        if self.top_k > self.channels:
            raise self.error(f"top_k ({self.top_k}) must not exceed the number of classes ({self.channels})")
        top[0].reshape(())
        if len(top) > 1:
            top[1].reshape((self.channels,))

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        scores = bottom[0].data.reshape(self.outer, self.channels, self.inner)
        labels = bottom[1].data.reshape(self.outer, 1, self.inner)
        label, valid = class_indices(self, labels, self.channels, self.ignore_label)
        truth = xp.take_along_axis(scores, label, axis=1)
        rivals = (scores >= truth).sum(axis=1, keepdims=True) - 1  # the label scores >= itself
        correct = (rivals < self.top_k) & valid
        count = valid.sum().astype(self.dtype)
        hits = correct.sum().astype(self.dtype)
        top[0].data[...] = xp.where(count > 0, hits / xp.maximum(count, 1), 0)
        if len(top) > 1:
            is_label = xp.arange(self.channels).reshape(1, -1, 1) == label
            nums = (is_label & valid).sum(axis=(0, 2)).astype(self.dtype)
            wins = (is_label & correct).sum(axis=(0, 2)).astype(self.dtype)
            top[1].data[...] = xp.where(nums > 0, wins / xp.maximum(nums, 1), 0)

    def allow_force_backward(self, bottom_index: int) -> bool:
        return False  # Caffe would abort in Backward; forcing it here would only raise
