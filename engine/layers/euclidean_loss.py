"""EuclideanLoss: half the mean squared distance between two blobs of N samples each.

Bottoms: a and b, same first axis N and the same count per sample (shapes may differ otherwise).
    loss = sum((a - b)^2) / (2 N)
    d loss / d a = (a - b) / N,  d loss / d b = -(a - b) / N
Both bottoms get a gradient (either may be the target), and both may be forced to.
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import LossLayer
from engine.layers.registry import register_layer


@register_layer("EuclideanLoss")
class EuclideanLossLayer(LossLayer):
    params = ("loss_param",)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        super().reshape(bottom, top)
        if bottom[0].count(1) != bottom[1].count(1):
            raise self.error(f"inputs must have the same dimension; got {self.describe_shapes(bottom)}")

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.diff = bottom[0].data - bottom[1].data.reshape(bottom[0].shape)
        flat = self.diff.ravel()
        top[0].data[...] = self.xp.dot(flat, flat) / (2 * bottom[0].shape[0])

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        scale = top[0].diff.reshape(()) / bottom[0].shape[0]
        for i, sign in ((0, 1), (1, -1)):
            if propagate_down[i]:
                self.xp.multiply(self.diff.reshape(bottom[i].shape), sign * scale, out=bottom[i].diff)

    def allow_force_backward(self, bottom_index: int) -> bool:
        return True
