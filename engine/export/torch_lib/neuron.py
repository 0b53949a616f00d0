"""Same-shape layers: ReLU, ELU, Clip, PReLU, Sigmoid, TanH, Swish, AbsVal, BNLL, Power, Exp, Log,
Threshold and Dropout, as Caffe computes them."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine.export.torch_lib.common import add_blobs


class ReLU(nn.Module):
    """y = max(x, 0) + negative_slope * min(x, 0); the gradient at 0 is negative_slope's side."""

    def __init__(self, negative_slope: float = 0.0) -> None:
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, self.negative_slope) if self.negative_slope else torch.relu(x)


class ELU(nn.Module):
    """y = x for x > 0, alpha (exp(x) - 1) otherwise."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(x > 0, x, self.alpha * torch.expm1(torch.clamp_max(x, 0)))


class Clip(nn.Module):
    """y = max(min, min(x, max))."""

    def __init__(self, min: float, max: float) -> None:
        super().__init__()
        self.min, self.max = min, max

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, self.min, self.max)


class PReLU(nn.Module):
    """y = max(x, 0) + a_c min(x, 0), one learned slope per channel (or one for all)."""

    slope: torch.Tensor
    blob_names: tuple[str, ...]

    helpers = ("add_blobs",)

    def __init__(self, blobs: Any) -> None:
        super().__init__()
        add_blobs(self, blobs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        channels = 1 if x.dim() == 1 else x.shape[1]
        v = x.reshape(x.shape[0], channels, -1)
        a = self.slope.reshape(1, -1, 1)
        return torch.where(v > 0, v, v * a).reshape(x.shape)


class Sigmoid(nn.Module):
    """y = 1 / (1 + exp(-x)), written as Caffe writes it: 0.5 tanh(x / 2) + 0.5."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * torch.tanh(0.5 * x) + 0.5


class TanH(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x)


class Swish(nn.Module):
    """y = x sigmoid(beta x)."""

    def __init__(self, beta: float = 1.0) -> None:
        super().__init__()
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * (0.5 * torch.tanh(0.5 * self.beta * x) + 0.5)


class AbsVal(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.abs(x)


class BNLL(nn.Module):
    """y = log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|))."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp_min(x, 0) + torch.log1p(torch.exp(-torch.abs(x)))


class Power(nn.Module):
    """y = (shift + scale x) ^ power."""

    def __init__(self, power: float = 1.0, scale: float = 1.0, shift: float = 0.0) -> None:
        super().__init__()
        self.power, self.scale, self.shift = power, scale, shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x * self.scale if self.scale != 1 else x
        t = t + self.shift if self.shift != 0 else t
        return t if self.power == 1 else torch.pow(t, self.power)


class Exp(nn.Module):
    """y = base ^ (shift + scale x) (base -1: e), as outer exp(inner x)."""

    def __init__(self, base: float = -1.0, scale: float = 1.0, shift: float = 0.0) -> None:
        super().__init__()
        log_base = 1.0 if base == -1 else math.log(base)
        self.inner, self.outer = log_base * scale, math.exp(log_base * shift)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.exp(x * self.inner if self.inner != 1 else x)
        return y * self.outer if self.outer != 1 else y


class Log(nn.Module):
    """y = log_base(shift + scale x) (base -1: natural log)."""

    def __init__(self, base: float = -1.0, scale: float = 1.0, shift: float = 0.0) -> None:
        super().__init__()
        self.base_scale = 1.0 if base == -1 else 1.0 / math.log(base)
        self.scale, self.shift = scale, shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x * self.scale if self.scale != 1 else x
        t = torch.log(t + self.shift if self.shift != 0 else t)
        return t * self.base_scale if self.base_scale != 1 else t


class Threshold(nn.Module):
    """y = 1 where x > threshold, else 0; no gradient."""

    def __init__(self, threshold: float = 0.0) -> None:
        super().__init__()
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.detach() > self.threshold).to(x.dtype)


class Dropout(nn.Module):
    """TRAIN: y = x m / (1 - ratio), m ~ Bernoulli(1 - ratio) drawn by every forward; TEST (or after
    .eval()): y = x. ``noise`` may be set to a function giving the uniform draws (to replay a run's)."""

    def __init__(self, ratio: float = 0.5, train: bool = True) -> None:
        super().__init__()
        self.ratio, self.train_phase = ratio, train
        self.noise: Any = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.train_phase and self.training):
            return x
        uniform = self.noise(x.shape) if self.noise is not None else torch.rand_like(x)
        keep = (uniform < 1.0 - self.ratio).to(x.dtype) * (1.0 / (1.0 - self.ratio))
        return x * keep
