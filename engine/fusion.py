"""Layers the CPU runs as one: a BatchNorm, the in-place Scale right after it, and a ReLU after that.

Caffe has no affine BatchNorm: every ResNet convolution is followed by a BatchNorm and a Scale (with
bias), both in place on the convolution's blob, and most by a ReLU in place too. Run one after the
other they make a trip over the blob each, each way; the channel_norm kernels fold the Scale (and
the ReLU) into BatchNorm's passes, so the group costs what BatchNorm alone does (ResNet-18 at batch
8: BatchNorm + Scale 46.6 ms a step -> 15).

Only what is not observable is fused. The layers work in place on one blob, so the blob holds the
last layer's output after the group's forward and BatchNorm's dE/dx after its backward, as when they
run one by one; the Scale's input (BatchNorm's x_norm, which BatchNorm keeps anyway) is lent to the
Scale, whose gradient needs it. The net runs a group as one only when it runs all its layers
(forward_to the BatchNorm runs the BatchNorm alone), without debug_info (which prints each layer's
blobs), and where no top has a loss weight. A net on the GPU has no groups; where the kernels
cannot take the arrays (float64) the layers run one by one.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from engine.blob import Blob
from engine.layers import channel_norm
from engine.layers.base import Layer
from engine.layers.batch_norm import BatchNormLayer
from engine.layers.relu import ReLULayer
from engine.layers.scale import ScaleLayer


class BatchNormScale:
    """A BatchNorm (in place), the learned Scale right after it and, where ``relu``, a ReLU (negative
    slope 0) after that, all in place on one blob."""

    def __init__(self, norm: BatchNormLayer, scale: ScaleLayer, blob: Blob, relu: bool) -> None:
        self.norm, self.scale, self.blob, self.relu = norm, scale, blob, relu
        self.size = 3 if relu else 2  # layers

    def _runs(self) -> bool:
        """Whether the Scale's axes are BatchNorm's: its dims the (N, C, S) BatchNorm sees."""
        return tuple(self.scale.dims) == self.norm._view(self.blob, self.blob.data).shape

    def _factors(self) -> tuple[Any, Any]:
        bias = self.scale.bias_layer
        return self.scale.blobs[0].data.reshape(-1), None if bias is None else bias.blobs[0].data.reshape(-1)

    def forward(self) -> bool:
        """The layers' forwards, the layers already reshaped; False (nothing done) where they must run
        one by one."""
        if not self._runs():
            return False
        blobs = [self.blob]
        if not self.norm.forward_compiled(blobs, blobs, *self._factors(), relu=self.relu):
            return False
        self.scale.borrow_input(self.norm.x_norm)
        return True

    def backward(self) -> bool:
        """The layers' backwards (the Scale's parameter gradients where it learns them), after the
        group's forward; False (nothing done) where they must run one by one."""
        if not (self.scale.input_borrowed and self._runs()):
            return False
        learns = self.scale.param_propagate_down
        d_scale = self.scale.blobs[0].diff.reshape(-1) if learns[0] else None
        d_bias = None
        if self.scale.bias_layer is not None and learns[-1]:
            d_bias = self.scale.bias_layer.blobs[0].diff.reshape(-1)
        blobs, scale = [self.blob], self._factors()[0]
        return self.norm.backward_compiled(blobs, blobs, scale, d_scale, d_bias, relu=self.relu)


def groups(
    layers: list[Layer], bottoms: list[list[Blob]], tops: list[list[Blob]], xp: ModuleType
) -> dict[int, BatchNormScale]:
    """The groups a net on ``xp`` can run as one, by their BatchNorm's index (see the module's
    docstring); none on the GPU, where the kernels do not run."""
    found: dict[int, BatchNormScale] = {}
    if xp is not np or not channel_norm.available():
        return found

    def in_place(i: int, blob: Blob) -> bool:
        return len(bottoms[i]) == 1 and bottoms[i][0] is blob and tops[i][0] is blob and not layers[i].loss(0)

    for i in range(len(layers) - 1):
        norm, scale = layers[i], layers[i + 1]
        if not (isinstance(norm, BatchNormLayer) and isinstance(scale, ScaleLayer)):
            continue
        blob = tops[i][0]
        if in_place(i, blob) and in_place(i + 1, blob):
            after = layers[i + 2] if i + 2 < len(layers) else None
            relu = isinstance(after, ReLULayer) and after.negative_slope == 0 and in_place(i + 2, blob)
            found[i] = BatchNormScale(norm, scale, blob, relu)
    return found
