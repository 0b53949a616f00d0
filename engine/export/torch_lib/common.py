"""Helpers shared by the exported layers (copied into a generated module with the layers using them)."""

from __future__ import annotations

import math

import torch
from torch import nn

FLT_MAX = 3.4028234663852886e38  # Caffe's -FLT_MAX starts MAX pooling
FLT_MIN = 1.1754943508222875e-38  # Caffe's floor under a probability before its log
LOG_THRESHOLD = 1e-20  # the floor of MultinomialLogisticLoss and InfogainLoss (kLOG_THRESHOLD)


def add_blobs(module: nn.Module, blobs: dict[str, tuple[int, ...]]) -> None:
    """Give ``module`` one zero Parameter per Caffe blob, named and in Caffe's order (``blob_names``)."""
    setattr(module, "blob_names", tuple(blobs))  # noqa: B010 (a plain attribute, not a submodule)
    for name, shape in blobs.items():
        setattr(module, name, nn.Parameter(torch.zeros(shape)))


def caffe_axis(axis: int, ndim: int) -> int:
    """A Caffe axis (negative counts from the end) as a non-negative index."""
    return axis + ndim if axis < 0 else axis


def count(shape: tuple[int, ...] | torch.Size, start: int = 0, end: int | None = None) -> int:
    """The number of values in axes start .. end - 1 (Caffe's Blob::count)."""
    return math.prod(shape[start:end])


def caffe_gradient(value: torch.Tensor, *pairs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """``value`` whose gradient with respect to each input x is the given g (Caffe's own formula, where
    it differs from the derivative of the forward at kinks or by a guard term)."""
    out = value.detach()
    for x, g in pairs:
        term = (x * g.detach()).sum()
        out = out + (term - term.detach())
    return out


def normalizer(mode: str, outer: int, inner: int, valid: torch.Tensor) -> torch.Tensor:
    """What a loss sum is divided by (Caffe's get_normalizer), never below 1."""
    if mode == "VALID":
        return torch.clamp_min(valid.sum().to(torch.float32), 1)
    sizes = {"FULL": outer * inner, "BATCH_SIZE": outer, "NONE": 1}
    return torch.tensor(float(max(1, sizes[mode])))
