"""Losses and Accuracy with Caffe's values and Caffe's gradients (loss weights are applied by the net)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engine.export.torch_lib.common import (
    FLT_MIN,
    LOG_THRESHOLD,
    caffe_axis,
    caffe_gradient,
    count,
    normalizer,
)


class SoftmaxWithLoss(nn.Module):
    """-sum log(max(p[label], FLT_MIN)) / normalizer over the labels that are not ignore_label, p the
    softmax over ``axis``; gradient (p - onehot(label)) / normalizer. A second top gives p."""

    helpers = ("FLT_MIN", "caffe_axis", "caffe_gradient", "count", "normalizer")

    def __init__(
        self,
        axis: int = 1,
        ignore_label: int | None = None,
        normalization: str = "VALID",
        with_prob: bool = False,
    ) -> None:
        super().__init__()
        self.axis, self.ignore_label, self.normalization = axis, ignore_label, normalization
        self.with_prob = with_prob

    def forward(self, x: torch.Tensor, label: torch.Tensor) -> Any:
        axis = caffe_axis(self.axis, x.dim())
        outer, classes, inner = count(x.shape, 0, axis), x.shape[axis], count(x.shape, axis + 1)
        scores = x.reshape(outer, classes, inner)
        prob = torch.softmax(scores.detach(), dim=1)
        whole = torch.trunc(label.detach()).reshape(outer, 1, inner)
        valid = (
            torch.ones_like(whole, dtype=torch.bool)
            if self.ignore_label is None
            else whole != self.ignore_label
        )
        index = torch.where(valid, whole, 0).long()
        picked = torch.gather(prob, 1, index)
        norm = normalizer(self.normalization, outer, inner, valid)
        value = -torch.where(valid, torch.log(torch.clamp_min(picked, FLT_MIN)), 0).sum() / norm
        onehot = torch.zeros_like(prob).scatter_(1, index, 1.0)
        loss = caffe_gradient(value, (scores, (prob - onehot) * valid / norm))
        return (loss, prob.reshape(x.shape)) if self.with_prob else loss


class SigmoidCrossEntropyLoss(nn.Module):
    """sum max(x, 0) - x t + log(1 + exp(-|x|)) / normalizer; gradient (sigmoid(x) - t) / normalizer."""

    helpers = ("caffe_gradient", "normalizer")

    def __init__(self, ignore_label: int | None = None, normalization: str = "BATCH_SIZE") -> None:
        super().__init__()
        self.ignore_label, self.normalization = ignore_label, normalization

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        xd, t = x.detach(), target.detach().reshape(x.shape)
        loss = torch.clamp_min(xd, 0) - xd * t + torch.log1p(torch.exp(-torch.abs(xd)))
        valid = (
            torch.ones_like(t, dtype=torch.bool)
            if self.ignore_label is None
            else torch.trunc(t) != self.ignore_label
        )
        norm = normalizer(self.normalization, x.shape[0], x[0].numel() if x.dim() else 1, valid)
        value = (loss * valid).sum() / norm
        grad = (0.5 * torch.tanh(0.5 * xd) + 0.5 - t) * valid / norm
        return caffe_gradient(value, (x, grad))


class EuclideanLoss(nn.Module):
    """sum((a - b)^2) / (2 N)."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        d = (a - b.reshape(a.shape)).reshape(-1)
        return torch.dot(d, d) / (2 * a.shape[0])


class ContrastiveLoss(nn.Module):
    """sum [y d^2 + (1 - y) max(margin - d, 0)^2] / 2N (legacy: max(margin - d^2, 0)), with Caffe's
    gradient (its 1e-4 guard under the distance)."""

    helpers = ("caffe_gradient",)

    def __init__(self, margin: float = 1.0, legacy_version: bool = False) -> None:
        super().__init__()
        self.margin, self.legacy = margin, legacy_version

    def forward(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        num = a.shape[0]
        diff = (a - b.reshape(a.shape)).reshape(num, -1).detach()
        dist_sq = (diff * diff).sum(dim=1)
        similar = torch.trunc(y.detach().reshape(num)) != 0
        if self.legacy:
            short = self.margin - dist_sq
            apart, beta = torch.clamp_min(short, 0), torch.full_like(dist_sq, -1.0 / num)
        else:
            dist = torch.sqrt(dist_sq)
            short = self.margin - dist
            apart = torch.clamp_min(short, 0) ** 2
            beta = -(1.0 / num) * short / (dist + 1e-4)
        value = torch.where(similar, dist_sq, apart).sum() / num / 2
        coef = torch.where(similar, torch.full_like(dist_sq, 1.0 / num), torch.where(short > 0, beta, 0))
        grad = coef.reshape(-1, 1) * diff
        return caffe_gradient(value, (a, grad.reshape(a.shape)), (b, -grad.reshape(b.shape)))


class HingeLoss(nn.Module):
    """One-vs-all hinge over the count / N scores of each sample: with t = -x at the label and +x
    elsewhere and m = max(0, 1 + t), L1 gives sum(m) / N (gradient +-sign(m) / N) and L2 sum(m^2) / N
    (gradient +-2 m / N), the sign - at the label."""

    helpers = ("caffe_gradient",)

    def __init__(self, norm: str = "L1") -> None:
        super().__init__()
        self.norm = norm

    def forward(self, x: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        num = x.shape[0]
        scores = x.reshape(num, -1)
        index = torch.trunc(label.detach()).reshape(num, 1).long()
        classes = torch.arange(scores.shape[1], device=x.device).reshape(1, -1)
        sign = torch.where(classes == index, -1.0, 1.0).to(x.dtype)
        margin = torch.clamp_min(1 + sign * scores.detach(), 0)
        if self.norm == "L1":
            value, grad = margin.sum() / num, sign * torch.sign(margin) / num
        else:
            value, grad = (margin * margin).sum() / num, sign * margin * (2.0 / num)
        return caffe_gradient(value, (scores, grad))


class MultinomialLogisticLoss(nn.Module):
    """-sum log(max(p[label], 1e-20)) / N over probabilities p given as input (count / N per sample);
    gradient -1 / (N max(p[label], 1e-20)) at the label, zero elsewhere."""

    helpers = ("LOG_THRESHOLD", "caffe_gradient")

    def forward(self, p: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        num = p.shape[0]
        prob = p.reshape(num, -1)
        index = torch.trunc(label.detach()).reshape(num, 1).long()
        picked = torch.clamp_min(torch.gather(prob.detach(), 1, index), LOG_THRESHOLD)
        value = -torch.log(picked).sum() / num
        grad = torch.zeros_like(prob).scatter_(1, index, (-1.0 / num) / picked)
        return caffe_gradient(value, (prob, grad))


class InfogainLoss(nn.Module):
    """The logistic loss weighted by the infogain matrix H: with p = softmax(x) over ``axis`` and
    l the label, -sum_k H[l, k] log(max(p_k, 1e-20)) / normalizer over the labels that are not
    ignore_label; gradient (p_k sum_j H[l, j] - H[l, k]) / normalizer. H is the ``infogain`` buffer
    (Caffe's infogain_loss_param.source, read when the net was exported) or a third input, which gets
    no gradient. A second top gives p."""

    helpers = ("LOG_THRESHOLD", "caffe_axis", "caffe_gradient", "count", "normalizer")

    def __init__(
        self,
        axis: int = 1,
        ignore_label: int | None = None,
        normalization: str = "VALID",
        infogain: tuple[tuple[float, ...], ...] | None = None,
        with_prob: bool = False,
    ) -> None:
        super().__init__()
        self.axis, self.ignore_label, self.normalization = axis, ignore_label, normalization
        self.with_prob = with_prob
        matrix = None if infogain is None else torch.tensor(infogain, dtype=torch.float32)
        self.register_buffer("infogain", matrix, persistent=False)  # not a Caffe blob

    def forward(self, x: torch.Tensor, label: torch.Tensor, h: torch.Tensor | None = None) -> Any:
        axis = caffe_axis(self.axis, x.dim())
        outer, classes, inner = count(x.shape, 0, axis), x.shape[axis], count(x.shape, axis + 1)
        scores = x.reshape(outer, classes, inner)
        matrix = (self.get_buffer("infogain") if h is None else h.detach()).reshape(classes, classes)
        prob = torch.softmax(scores.detach(), dim=1)
        whole = torch.trunc(label.detach()).reshape(outer, inner)
        valid = (
            torch.ones_like(whole, dtype=torch.bool)
            if self.ignore_label is None
            else whole != self.ignore_label
        )
        rows = matrix[torch.where(valid, whole, 0).long()].permute(0, 2, 1)  # H[label]: (outer, C, inner)
        mask = valid.unsqueeze(1)
        norm = normalizer(self.normalization, outer, inner, valid)
        log_p = torch.log(torch.clamp_min(prob, LOG_THRESHOLD))
        value = -(rows * log_p * mask).sum() / norm
        grad = (prob * rows.sum(dim=1, keepdim=True) - rows) * mask / norm
        loss = caffe_gradient(value, (scores, grad))
        return (loss, prob.reshape(x.shape)) if self.with_prob else loss


class Accuracy(nn.Module):
    """The fraction of labels among the top_k scores (ties count against the label); no gradient."""

    helpers = ("caffe_axis", "count")

    def __init__(self, top_k: int = 1, axis: int = 1, ignore_label: int | None = None) -> None:
        super().__init__()
        self.top_k, self.axis, self.ignore_label = top_k, axis, ignore_label

    def forward(self, x: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        axis = caffe_axis(self.axis, x.dim())
        outer, classes, inner = count(x.shape, 0, axis), x.shape[axis], count(x.shape, axis + 1)
        scores = x.detach().reshape(outer, classes, inner)
        whole = torch.trunc(label.detach()).reshape(outer, 1, inner)
        valid = (
            torch.ones_like(whole, dtype=torch.bool)
            if self.ignore_label is None
            else whole != self.ignore_label
        )
        truth = torch.gather(scores, 1, torch.where(valid, whole, 0).long())
        rivals = (scores >= truth).sum(dim=1, keepdim=True) - 1
        hits = ((rivals < self.top_k) & valid).sum().to(x.dtype)
        total = valid.sum().to(x.dtype)
        return torch.where(total > 0, hits / torch.clamp_min(total, 1), 0.0)
