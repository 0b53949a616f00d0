"""ContrastiveLoss: pulls similar pairs together and pushes dissimilar ones past a margin.

Bottoms: features a and b (N x C, trailing axes of size 1) and N similarity labels y (nonzero:
similar). With d^2 = |a_n - b_n|^2 and m = contrastive_loss_param.margin:
    loss = sum_n [y_n d^2 + (1 - y_n) max(m - d, 0)^2] / 2N          (legacy_version: max(m - d^2, 0))
    d loss / d a_n = (a_n - b_n) / N                                 similar
                   = -(m - d) (a_n - b_n) / ((d + 1e-4) N) if d < m  dissimilar (legacy: -(a_n - b_n) / N)
and the opposite for b. No gradient for y.
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import LossLayer
from engine.layers.registry import register_layer


@register_layer("ContrastiveLoss")
class ContrastiveLossLayer(LossLayer):
    exact_num_bottom = 3
    params = ("contrastive_loss_param", "loss_param")

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        param = self.param.contrastive_loss_param
        self.margin = self.dtype.type(param.margin)
        self.legacy = param.legacy_version

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        super().reshape(bottom, top)
        a, b, y = bottom
        self.num = a.shape[0]
        if any(d != 1 for blob in (a, b) for d in blob.shape[2:]):
            raise self.error(f"features must be N x C (x 1 x 1); got {self.describe_shapes(bottom)}")
        if a.count(1) != b.count(1):
            raise self.error(f"both features must have the same channels; got {self.describe_shapes(bottom)}")
        if y.shape[:1] != (self.num,) or y.count(1) != 1:
            raise self.error(f"needs one similarity label per pair (N x 1 x 1 x 1); got {y.shape}")

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        self.diff = (bottom[0].data - bottom[1].data.reshape(bottom[0].shape)).reshape(
            self.num, bottom[0].count(1)
        )
        self.dist_sq = (self.diff * self.diff).sum(axis=1)
        self.similar = xp.trunc(bottom[2].data.reshape(self.num)) != 0  # Caffe: static_cast<int>(y)
        if self.legacy:
            apart = xp.maximum(self.margin - self.dist_sq, 0)
        else:
            apart = xp.maximum(self.margin - xp.sqrt(self.dist_sq), 0) ** 2
        top[0].data[...] = xp.where(self.similar, self.dist_sq, apart).sum() / self.num / 2

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[2]:
            raise self.error("cannot backpropagate to the similarity labels")
        xp = self.xp
        alpha = top[0].diff.reshape(()) / self.num
        if self.legacy:
            short = self.margin - self.dist_sq
            beta = -alpha
        else:
            dist = xp.sqrt(self.dist_sq)
            short = self.margin - dist
            beta = -alpha * short / (dist + self.dtype.type(1e-4))
        coef = xp.where(self.similar, alpha, xp.where(short > 0, beta, 0))
        grad = coef.reshape(-1, 1) * self.diff
        for i, sign in ((0, 1), (1, -1)):
            if propagate_down[i]:
                bottom[i].diff[...] = (sign * grad).reshape(bottom[i].shape)

    def allow_force_backward(self, bottom_index: int) -> bool:
        return bottom_index != 2
