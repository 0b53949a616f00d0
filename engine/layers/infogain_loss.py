"""InfogainLoss: the multinomial logistic loss weighted by an "information gain" matrix H.

Bottoms: raw scores x (outer, C, inner) around ``infogain_loss_param.axis`` (softmax is applied
here, as in Caffe master), outer * inner integer labels, and optionally H (C x C) as a third
bottom; otherwise H is read from the BlobProto file ``infogain_loss_param.source``.
With p = softmax(x) over the class axis and row l = label:
    loss = -sum_valid sum_k H[l, k] log(max(p_k, 1e-20)) / normalizer
    d loss / d x_k = (p_k sum_j H[l, j] - H[l, k]) / normalizer, zero where l == ignore_label
H = identity gives SoftmaxWithLoss. The normalizer follows loss_param.normalization (default VALID).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from google.protobuf.message import DecodeError

from engine import backend
from engine.blob import Blob, proto_to_array
from engine.layers.base import LossLayer
from engine.layers.registry import register_layer
from engine.layers.softmax_loss import class_geometry, class_indices, get_normalizer, softmax
from proto import caffe_pb2
from proto.inputs import open_regular

LOG_THRESHOLD = 1e-20


@register_layer("InfogainLoss")
class InfogainLossLayer(LossLayer):
    exact_num_bottom = -1
    min_bottom = 2
    max_bottom = 3
    exact_num_top = -1
    min_top = 1
    max_top = 2
    params = ("infogain_loss_param", "loss_param")

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        loss_param = self.param.loss_param
        if loss_param.HasField("normalize"):
            raise self.error('loss_param.normalize is deprecated here; use "normalization"')
        self.normalization = loss_param.normalization
        self.ignore_label = loss_param.ignore_label if loss_param.HasField("ignore_label") else None
        self.infogain: Any = None  # H read from `source`, when not a bottom
        if len(bottom) < 3:
            source = self.param.infogain_loss_param.source
            if not source:
                raise self.error(
                    "give the infogain matrix as infogain_loss_param.source or as a third bottom"
                )
            try:
                with open_regular(source) as f:
                    proto = caffe_pb2.BlobProto.FromString(f.read())
                matrix = proto_to_array(proto, self.dtype)
            except (OSError, ValueError, DecodeError) as exc:
                raise self.error(f"cannot read the infogain matrix from '{source}': {exc}") from exc
            self.infogain = self.xp.asarray(matrix)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        super().reshape(bottom, top)
        self.outer, self.channels, self.inner = class_geometry(
            self, bottom, self.param.infogain_loss_param.axis
        )
        if self.channels == 0:
            raise self.error(f"the class axis of the scores is empty: {self.describe_shapes(bottom[:1])}")
        h_count = bottom[2].count() if len(bottom) > 2 else self.infogain.size
        if h_count != self.channels**2:
            raise self.error(f"H must be {self.channels}x{self.channels}, got {h_count} values")
        if len(top) > 1:
            top[1].reshape(bottom[0].shape)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        h = (bottom[2].data if len(bottom) > 2 else self.infogain).reshape(self.channels, self.channels)
        self.prob = softmax(xp, bottom[0].data.reshape(self.outer, self.channels, self.inner), axis=1)
        labels = bottom[1].data.reshape(self.outer, self.inner)
        label, valid = class_indices(self, labels, self.channels, self.ignore_label)
        self.valid = valid[:, None, :]
        self.rows = h[label].transpose(0, 2, 1)  # H[label] for each position: (outer, C, inner)
        log_p = xp.log(xp.maximum(self.prob, self.dtype.type(LOG_THRESHOLD)))
        self.normalizer = get_normalizer(
            self.normalization, self.outer, self.inner, valid.sum().astype(self.dtype)
        )
        top[0].data[...] = -(self.rows * log_p * self.valid).sum() / self.normalizer
        if len(top) > 1:
            top[1].data[...] = self.prob.reshape(bottom[0].shape)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[1]:
            raise self.error("cannot backpropagate to the label input")
        if len(propagate_down) > 2 and propagate_down[2]:
            raise self.error("cannot backpropagate to the infogain matrix")
        if not propagate_down[0]:
            return
        diff = self.prob * self.rows.sum(axis=1, keepdims=True) - self.rows
        diff *= self.valid
        diff *= top[0].diff.reshape(()) / self.normalizer
        bottom[0].diff[...] = diff.reshape(bottom[0].shape)

    def allow_force_backward(self, bottom_index: int) -> bool:
        return bottom_index == 0  # neither the labels nor H get a gradient

    def to(self, xp: ModuleType) -> None:
        super().to(xp)
        if self.infogain is not None:
            self.infogain = backend.to_module(self.infogain, xp)
