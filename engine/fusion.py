"""Layers the CPU runs as one: a BatchNorm and the in-place Scale right after it.

Caffe has no affine BatchNorm: every ResNet convolution is followed by a BatchNorm and a Scale (with
bias), both in place on the convolution's blob. Run one after the other they make two trips over
the blob each way; the channel_norm kernels fold the Scale into BatchNorm's passes, so the pair
costs what BatchNorm alone does (ResNet-18 at batch 8: the Scale layers' 17 ms a step go).

Only what is not observable is fused. Both layers work in place on one blob, so the blob holds y
after the pair's forward and BatchNorm's dE/dx after its backward, as when they run one by one; the
Scale's input (BatchNorm's x_norm, which BatchNorm keeps anyway) is lent to the Scale, whose
gradient needs it. The net runs a pair as one only when it runs both layers of it (forward_to the
BatchNorm alone runs the BatchNorm alone), without debug_info (which prints each layer's blobs),
and where a loss weight is on neither top. Where the kernels cannot take the arrays (cupy, float64)
the layers run one by one.
"""

from __future__ import annotations

from typing import Any

from engine.blob import Blob
from engine.layers import channel_norm
from engine.layers.base import Layer
from engine.layers.batch_norm import BatchNormLayer
from engine.layers.scale import ScaleLayer


class BatchNormScale:
    """A BatchNorm (in place) and the learned Scale right after it (in place on the same blob)."""

    def __init__(self, norm: BatchNormLayer, scale: ScaleLayer, blob: Blob) -> None:
        self.norm, self.scale, self.blob = norm, scale, blob

    def _runs(self) -> bool:
        """Whether the Scale's axes are BatchNorm's: its dims the (N, C, S) BatchNorm sees."""
        return tuple(self.scale.dims) == self.norm._view(self.blob, self.blob.data).shape

    def _factors(self) -> tuple[Any, Any]:
        bias = self.scale.bias_layer
        return self.scale.blobs[0].data.reshape(-1), None if bias is None else bias.blobs[0].data.reshape(-1)

    def forward(self) -> bool:
        """Both forwards, the layers already reshaped; False (nothing done) where they must run alone."""
        if not self._runs():
            return False
        blobs = [self.blob]
        if not self.norm.forward_compiled(blobs, blobs, *self._factors()):
            return False
        self.scale.borrow_input(self.norm.x_norm)
        return True

    def backward(self) -> bool:
        """Both backwards (the Scale's parameter gradients where it learns them), after the pair's
        forward; False (nothing done) where they must run alone."""
        if not (self.scale.input_borrowed and self._runs()):
            return False
        learns = self.scale.param_propagate_down
        d_scale = self.scale.blobs[0].diff.reshape(-1) if learns[0] else None
        d_bias = None
        if self.scale.bias_layer is not None and learns[-1]:
            d_bias = self.scale.bias_layer.blobs[0].diff.reshape(-1)
        blobs = [self.blob]
        return self.norm.backward_compiled(blobs, blobs, self._factors()[0], d_scale, d_bias)


def pairs(
    layers: list[Layer], bottoms: list[list[Blob]], tops: list[list[Blob]]
) -> dict[int, BatchNormScale]:
    """The pairs a net can run as one, by their BatchNorm's index (see the module's docstring)."""
    found: dict[int, BatchNormScale] = {}
    if not channel_norm.available():
        return found
    for i in range(len(layers) - 1):
        norm, scale = layers[i], layers[i + 1]
        if not (isinstance(norm, BatchNormLayer) and isinstance(scale, ScaleLayer)):
            continue
        blob = tops[i][0]
        in_place = bottoms[i][0] is blob and len(bottoms[i + 1]) == 1 and bottoms[i + 1][0] is blob
        if in_place and tops[i + 1][0] is blob and not norm.loss(0) and not scale.loss(0):
            found[i] = BatchNormScale(norm, scale, blob)
    return found
