"""SoftmaxWithLoss, and the label and normalization helpers the classification losses share.

Scores ``x`` of shape (outer, C, inner) around ``softmax_param.axis``; labels: outer * inner
integers in [0, C) (or ``loss_param.ignore_label``). With p = softmax(x) over the class axis:

    loss = -sum_valid log(max(p[label], FLT_MIN)) / normalizer
    d loss / d x = (p - onehot(label)) / normalizer, zero at ignored positions

The normalizer is Caffe's get_normalizer: FULL outer*inner, VALID the number of non-ignored labels
(default), BATCH_SIZE outer, NONE 1, and never below 1. An optional second top holds p.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from engine import backend, graphs, kernels
from engine.blob import Blob
from engine.layers.base import Layer, LossLayer
from engine.layers.registry import register_layer
from proto import caffe_pb2

Mode = caffe_pb2.LossParameter
FLT_MIN = float(np.finfo(np.float32).tiny)  # Caffe clamps with the float constant for every Dtype


def normalization_mode(loss_param: caffe_pb2.LossParameter, default: int | None = None) -> int:
    """The mode a layer uses: `normalization` if given, else the legacy `normalize`, else `default`."""
    if loss_param.HasField("normalization"):
        return loss_param.normalization
    if loss_param.HasField("normalize"):
        return Mode.VALID if loss_param.normalize else Mode.BATCH_SIZE
    return loss_param.normalization if default is None else default


def get_normalizer(mode: int, outer: int, inner: int, valid_count: Any) -> Any:
    """What the summed loss is divided by; ``valid_count`` is an array (kept on the device)."""
    if mode == Mode.VALID:
        return backend.get_array_module(valid_count).maximum(valid_count, 1)
    sizes: dict[int, int] = {Mode.FULL: outer * inner, Mode.BATCH_SIZE: outer, Mode.NONE: 1}
    if mode not in sizes:
        raise ValueError(f"unknown normalization mode {mode}")
    return max(1, sizes[mode])


def class_indices(layer: Layer, labels: Any, num_classes: int, ignore_label: int | None) -> tuple[Any, Any]:
    """Integer labels (ignored ones set to 0) and the mask of labels that count.

    Labels are truncated to integers as Caffe's static_cast<int> does (a DummyData uniform
    label of 2.7 is class 2). Caffe only DCHECKs the range; here a class outside
    [0, num_classes) raises, at the price of one device sync per call.
    """
    xp = layer.xp
    whole = xp.trunc(labels)
    if ignore_label is None:
        valid = xp.ones(labels.shape, bool)
    else:
        valid = whole != ignore_label  # Caffe compares static_cast<int>(label)
    good = (whole >= 0) & (whole < num_classes)
    if not bool(xp.all(good | ~valid)):
        bad = backend.to_host(labels)[backend.to_host(valid & ~good)]
        raise layer.error(
            f"labels must lie in [0, {num_classes}) (or be the ignore_label); got {bad[:5].tolist()}"
        )
    return xp.where(valid, whole, 0).astype(np.int64), valid


def class_geometry(layer: Layer, bottom: list[Blob], axis: int) -> tuple[int, int, int]:
    """(outer, channels, inner) around the class ``axis``; one label per position outside it."""
    try:
        axis = bottom[0].canonical_axis_index(axis)
    except ValueError as exc:
        raise layer.error(str(exc)) from None
    outer, inner = bottom[0].count(0, axis), bottom[0].count(axis + 1)
    if outer * inner != bottom[1].count():
        raise layer.error(
            f"number of labels ({bottom[1].count()}) must match the number of predictions "
            f"({outer * inner}): with scores {bottom[0].shape} and axis {axis}, "
            "give one integer label in [0, C) per position outside the class axis"
        )
    return outer, bottom[0].shape[axis], inner


def per_sample(layer: Layer, bottom: list[Blob]) -> tuple[int, int]:
    """(N, values per sample) for losses that take one label per sample."""
    num = bottom[0].shape[0]
    if bottom[1].count() != num:
        raise layer.error(f"needs one label per sample (N x 1 x 1 x 1); got {layer.describe_shapes(bottom)}")
    return num, bottom[0].count() // max(num, 1)


def softmax(xp: ModuleType, x: Any, axis: int) -> Any:
    """exp(x - max) normalised along ``axis``."""
    e = xp.exp(x - x.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


@register_layer("SoftmaxWithLoss")
class SoftmaxWithLossLayer(LossLayer):
    exact_num_top = -1
    min_top = 1
    max_top = 2
    params = ("softmax_param", "loss_param")

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        loss_param = self.param.loss_param
        self.workspace = backend.Workspace()
        self.fused = False
        self.ignore_label = loss_param.ignore_label if loss_param.HasField("ignore_label") else None
        self.normalization = normalization_mode(loss_param)

    def fused_forward(self, scores: Any, labels: Any, top: list[Blob]) -> bool:
        """The GPU's forward as one kernel (softmax, picked log-probability, label checks) and two sums."""
        xp, ws = self.xp, self.workspace
        if not kernels.enabled(scores):
            return False
        positions = labels.shape
        self.prob = ws.get("prob", scores.shape, self.dtype, xp)
        loss, self.valid, bad = (ws.get(name, positions, self.dtype, xp) for name in ("loss", "valid", "bad"))
        if not kernels.softmax_loss_forward(
            scores, labels, self.prob, loss, self.valid, bad, self.ignore_label
        ):
            return False
        flagged = bad.any()
        if graphs.capturing():  # no sync inside a CUDA graph: the graph flags, a check reads it after
            graphs.after_launch(lambda: self.check_labels(flagged, labels))
        else:
            self.check_labels(flagged, labels)
        self.labels = labels
        self.normalizer = get_normalizer(self.normalization, self.outer, self.inner, self.valid.sum())
        xp.divide(loss.sum(), self.normalizer, out=top[0].data)
        if len(top) > 1:
            top[1].data[...] = self.prob.reshape(top[1].shape)
        return True

    def check_labels(self, flagged: Any, labels: Any) -> None:
        """One sync, as the general path's check: if the kernel flagged a label, name the bad ones."""
        if bool(flagged):
            class_indices(self, labels, self.channels, self.ignore_label)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        super().reshape(bottom, top)
        self.outer, self.channels, self.inner = class_geometry(self, bottom, self.param.softmax_param.axis)
        if self.channels == 0:
            raise self.error(f"the class axis of the scores is empty: {self.describe_shapes(bottom[:1])}")
        if len(top) > 1:
            top[1].reshape(bottom[0].shape)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        scores = bottom[0].data.reshape(self.outer, self.channels, self.inner)
        self.fused = self.fused_forward(scores, bottom[1].data.reshape(self.outer, self.inner), top)
        if self.fused:
            return
        self.prob = softmax(xp, scores, axis=1)
        labels = bottom[1].data.reshape(self.outer, 1, self.inner)
        self.label, self.valid = class_indices(self, labels, self.channels, self.ignore_label)
        picked = xp.take_along_axis(self.prob, self.label, axis=1)
        log_p = xp.log(xp.maximum(picked, FLT_MIN))
        self.normalizer = get_normalizer(
            self.normalization, self.outer, self.inner, self.valid.sum().astype(self.dtype)
        )
        top[0].data[...] = -xp.where(self.valid, log_p, 0).sum() / self.normalizer
        if len(top) > 1:
            top[1].data[...] = self.prob.reshape(bottom[0].shape)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[1]:
            raise self.error("cannot backpropagate to the label input")
        if not propagate_down[0]:
            return
        xp = self.xp
        if self.fused:
            scale = self.workspace.get("scale", (), self.dtype, xp)
            xp.divide(top[0].diff.reshape(()), self.normalizer, out=scale)
            dx = bottom[0].diff.reshape(self.prob.shape)
            if kernels.softmax_loss_backward(self.prob, self.labels, self.valid, scale, dx):
                return
        classes = xp.arange(self.channels).reshape(1, -1, 1)
        diff = self.prob - (classes == self.label)
        diff *= self.valid
        diff *= top[0].diff.reshape(()) / self.normalizer
        bottom[0].diff[...] = diff.reshape(bottom[0].shape)
