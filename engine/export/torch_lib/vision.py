"""Convolution, Deconvolution, Pooling, LRN, InnerProduct, BatchNorm, Scale and Bias, with Caffe's
semantics."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine.export.torch_lib.common import FLT_MAX, FLT_MIN, add_blobs, caffe_axis, count


class Convolution(nn.Module):
    """Caffe's convolution: out = floor((in + 2 pad - extent) / stride) + 1 per spatial axis, where an
    extent past the padded input by less than the stride still gives one output (zeros beyond)."""

    weight: torch.Tensor
    bias: torch.Tensor
    blob_names: tuple[str, ...]

    helpers = ("add_blobs",)

    def __init__(self, kernel: Any, stride: Any, pad: Any, dilation: Any, group: int, blobs: Any) -> None:
        super().__init__()
        self.kernel, self.stride, self.pad, self.dilation, self.group = kernel, stride, pad, dilation, group
        add_blobs(self, blobs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spatial = x.shape[2:]
        far = [
            max(0, d * (k - 1) + 1 - (i + 2 * p))
            for i, k, p, d in zip(spatial, self.kernel, self.pad, self.dilation)
        ]
        if any(far):  # F.pad lists the last axis first
            x = F.pad(x, [v for f in reversed(far) for v in (0, f)])
        conv = (F.conv1d, F.conv2d, F.conv3d)[len(self.kernel) - 1]
        bias = self.bias if "bias" in self.blob_names else None
        return conv(x, self.weight, bias, self.stride, self.pad, self.dilation, self.group)


class Deconvolution(nn.Module):
    """Caffe's deconvolution (a convolution's backward pass): out = stride (in - 1) + extent - 2 pad."""

    weight: torch.Tensor
    bias: torch.Tensor
    blob_names: tuple[str, ...]

    helpers = ("add_blobs",)

    def __init__(self, kernel: Any, stride: Any, pad: Any, dilation: Any, group: int, blobs: Any) -> None:
        super().__init__()
        self.kernel, self.stride, self.pad, self.dilation, self.group = kernel, stride, pad, dilation, group
        add_blobs(self, blobs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[len(self.kernel) - 1]
        bias = self.bias if "bias" in self.blob_names else None
        return conv(x, self.weight, bias, self.stride, self.pad, 0, self.group, self.dilation)


class Pooling(nn.Module):
    """Caffe's pooling. Output size: ceil (or floor) of (in + 2 pad - kernel) / stride, plus one; with
    padding, a last window that would start past the image is dropped. The windows are cut from the
    input padded to a frame that holds all of them (-inf for MAX, 0 for AVE); AVE divides each sum by
    the window clipped to the padded image (Caffe's divisor), MAX never goes below -FLT_MAX."""

    helpers = ("FLT_MAX", "FLT_MIN")

    def __init__(
        self,
        method: str,
        kernel: Any,
        stride: Any,
        pad: Any,
        global_pooling: bool = False,
        ceil: bool = True,
        with_mask: bool = False,
    ) -> None:
        super().__init__()
        self.method, self.kernel, self.stride, self.pad = method, kernel, stride, pad
        self.global_pooling, self.ceil, self.with_mask = global_pooling, ceil, with_mask

    def geometry(self, size: Any) -> tuple[Any, list[int], list[int]]:
        kernel = tuple(size) if self.global_pooling else self.kernel
        rounding = math.ceil if self.ceil else math.floor
        pooled = []
        for i, k, p, s in zip(size, kernel, self.pad, self.stride):
            n = int(rounding((i + 2 * p - k) / s)) + 1
            if any(self.pad) and (n - 1) * s >= i + p:
                n -= 1
            pooled.append(n)
        frame = [(n - 1) * s + k for n, s, k in zip(pooled, self.stride, kernel)]
        return kernel, pooled, frame

    def forward(self, x: torch.Tensor) -> Any:
        size = x.shape[2:]
        kernel, pooled, frame = self.geometry(size)
        (ph, pw), (fh, fw) = self.pad, frame
        sides = [pw, fw - pw - size[1], ph, fh - ph - size[0]]  # negative: the frame ends inside the image
        if self.method == "MAX":
            framed = F.pad(x, sides, value=-math.inf)
            if not self.with_mask:
                return F.max_pool2d(framed, kernel, self.stride).clamp_min(-FLT_MAX)
            y, index = F.max_pool2d(framed, kernel, self.stride, return_indices=True)
            row, col = index // fw - ph, index % fw - pw  # the mask top: h W + w in the image, -1 for none
            mask = torch.where(y > -FLT_MAX, row * size[1] + col, -1).to(x.dtype)
            return y.clamp_min(-FLT_MAX), mask
        framed = F.pad(x, sides, value=0.0)
        if self.method == "AVE":
            sums = F.avg_pool2d(framed, kernel, self.stride, divisor_override=1)
            spans = []
            for i, n, k, p, s in zip(size, pooled, kernel, self.pad, self.stride):
                start = torch.arange(n, dtype=x.dtype, device=x.device) * s - p
                spans.append(torch.minimum(start + k, torch.tensor(float(i + p))) - start)
            return sums / torch.outer(*spans)
        # STOCHASTIC at TEST: every value weighted by itself
        squares = F.avg_pool2d(framed * framed, kernel, self.stride, divisor_override=1)
        return squares / (FLT_MIN + F.avg_pool2d(framed, kernel, self.stride, divisor_override=1))


class LRN(nn.Module):
    """Local response normalization: y = x (k + alpha / size * sum of x^2 over the window) ^ -beta, the
    window local_size channels (ACROSS_CHANNELS; size = n) or n x n pixels (WITHIN_CHANNEL; size = n^2,
    k = 1), zero-padded."""

    def __init__(self, local_size: int, alpha: float, beta: float, k: float, across_channels: bool) -> None:
        super().__init__()
        self.n, self.alpha, self.beta, self.k, self.across = local_size, alpha, beta, k, across_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        half = (self.n - 1) // 2
        squares = x * x
        if self.across:
            window = F.avg_pool3d(
                squares.unsqueeze(1), (self.n, 1, 1), 1, (half, 0, 0), divisor_override=1
            ).squeeze(1)
            scale = self.k + (self.alpha / self.n) * window
        else:
            window = F.avg_pool2d(squares, self.n, 1, half, divisor_override=1)
            scale = 1.0 + (self.alpha / self.n**2) * window
        return x * scale ** (-self.beta)


class InnerProduct(nn.Module):
    """y = x W^T + b over the axes from ``axis`` on, flattened; W is (num_output, K), or (K, num_output)
    when ``transpose``."""

    weight: torch.Tensor
    bias: torch.Tensor
    blob_names: tuple[str, ...]

    helpers = ("add_blobs", "count")

    def __init__(self, axis: int, transpose: bool, blobs: Any) -> None:
        super().__init__()
        self.axis, self.transpose = axis, transpose
        add_blobs(self, blobs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        axis = self.axis + x.dim() if self.axis < 0 else self.axis
        flat = x.reshape(count(x.shape, 0, axis), count(x.shape, axis))
        weight = self.weight.t() if self.transpose else self.weight
        bias = self.bias if "bias" in self.blob_names else None
        y = F.linear(flat, weight, bias)
        return y.reshape(*x.shape[:axis], y.shape[1])


class BatchNorm(nn.Module):
    """y = (x - mean_c) / sqrt(var_c + eps) per channel, from the batch (updating Caffe's running sums,
    with its scale factor and m / (m - 1) variance correction) or from those sums / the factor."""

    mean: torch.Tensor
    variance: torch.Tensor
    scale_factor: torch.Tensor
    blob_names: tuple[str, ...]

    helpers = ("add_blobs",)

    def __init__(
        self, use_global_stats: bool, moving_average_fraction: float, eps: float, blobs: Any
    ) -> None:
        super().__init__()
        self.use_global_stats, self.maf, self.eps = use_global_stats, moving_average_fraction, eps
        add_blobs(self, blobs)
        for name in self.blob_names:  # statistics, never learned (lr_mult 0)
            getattr(self, name).requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        channels = 1 if x.dim() == 1 else x.shape[1]
        v = x.reshape(x.shape[0], channels, -1)
        if self.use_global_stats:
            factor = self.scale_factor
            inverse = torch.where(factor != 0, 1 / torch.where(factor != 0, factor, 1), 0)
            mean, var = self.mean * inverse, self.variance * inverse
            centered = v - mean.reshape(1, -1, 1)
        else:
            mean = v.mean(dim=(0, 2))
            centered = v - mean.reshape(1, -1, 1)
            var = (centered * centered).mean(dim=(0, 2))
            m = x.numel() // channels
            with torch.no_grad():
                self.scale_factor.mul_(self.maf).add_(1)
                self.mean.mul_(self.maf).add_(mean)
                self.variance.mul_(self.maf).add_(var * (m / (m - 1) if m > 1 else 1.0))
        return (centered / torch.sqrt(var + self.eps).reshape(1, -1, 1)).reshape(x.shape)


class Scale(nn.Module):
    """y = x * s (+ b), s broadcast over the axes before ``axis`` and after its own: s is the second
    bottom or the learned ``weight``; b the learned ``bias`` (bias_term)."""

    weight: torch.Tensor
    bias: torch.Tensor
    blob_names: tuple[str, ...]

    helpers = ("add_blobs", "caffe_axis", "count")

    def __init__(self, axis: int, blobs: Any) -> None:
        super().__init__()
        self.axis = axis
        add_blobs(self, blobs)

    def forward(self, x: torch.Tensor, operand: torch.Tensor | None = None) -> torch.Tensor:
        s = self.weight if operand is None else operand
        start = 0 if s.dim() == 0 else caffe_axis(self.axis, x.dim())
        dims = (count(x.shape, 0, start), s.numel(), count(x.shape, start + s.dim()))
        y = x.reshape(dims) * s.reshape(1, -1, 1)
        if "bias" in self.blob_names:
            y = y + self.bias.reshape(1, -1, 1)
        return y.reshape(x.shape)


class Bias(nn.Module):
    """y = x + b, b (the second bottom or the learned ``bias``) broadcast as Scale's operand."""

    bias: torch.Tensor
    blob_names: tuple[str, ...]

    helpers = ("add_blobs", "caffe_axis", "count")

    def __init__(self, axis: int, blobs: Any) -> None:
        super().__init__()
        self.axis = axis
        add_blobs(self, blobs)

    def forward(self, x: torch.Tensor, operand: torch.Tensor | None = None) -> torch.Tensor:
        b = self.bias if operand is None else operand
        start = 0 if b.dim() == 0 else caffe_axis(self.axis, x.dim())
        dims = (count(x.shape, 0, start), b.numel(), count(x.shape, start + b.dim()))
        return (x.reshape(dims) + b.reshape(1, -1, 1)).reshape(x.shape)


class MVN(nn.Module):
    """y = (x - mean) / (std + eps), or x - mean without normalize_variance, over each (n, c) slice (each
    sample n with across_channels); std the population one. Caffe's gradient holds std + eps fixed:
    (dy - mean(dy) - y mean(dy y)) / (std + eps), which the linear stand-in below has as its own."""

    def __init__(self, normalize_variance: bool = True, across_channels: bool = False, eps: float = 1e-9):
        super().__init__()
        self.normalize_variance, self.across_channels, self.eps = normalize_variance, across_channels, eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() == 0:
            return x * 1
        groups = x.shape[0] * (1 if self.across_channels or x.dim() < 2 else x.shape[1])
        v = x.reshape(groups, -1)
        centered = v - v.mean(dim=1, keepdim=True)
        if not self.normalize_variance:
            return centered.reshape(x.shape)
        c = centered.detach()
        std = torch.sqrt((c * c).mean(dim=1, keepdim=True)) + self.eps
        y = c / std
        # Linear in x with y and std held: its vector-Jacobian product is Caffe's backward (the
        # centering of the y term adds mean(y) mean(dy y), zero but for rounding since y is centred).
        stand_in = (centered - y * (centered * y).mean(dim=1, keepdim=True)) / std
        return (y + (stand_in - stand_in.detach())).reshape(x.shape)


class SPP(nn.Module):
    """Spatial pyramid pooling: level l = 0 .. pyramid_height - 1 pools 2^l x 2^l bins with Caffe's
    Pooling (kernel = stride = ceil(H / 2^l), pad = (kernel 2^l - H + 1) // 2, the same for W); the
    levels flattened and joined: (N, C sum_l 4^l). A single level gives its (N, C, 1, 1) top itself."""

    helpers = ("Pooling",)

    def __init__(self, pyramid_height: int, method: str) -> None:
        super().__init__()
        self.pyramid_height, self.method = pyramid_height, method

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        height, width = x.shape[2:]
        levels = []
        for level in range(self.pyramid_height):
            bins = 2**level
            kh, kw = math.ceil(height / bins), math.ceil(width / bins)
            pad = ((kh * bins - height + 1) // 2, (kw * bins - width + 1) // 2)
            levels.append(Pooling(self.method, (kh, kw), (kh, kw), pad)(x))
        if len(levels) == 1:
            return levels[0]
        return torch.cat([y.reshape(x.shape[0], -1) for y in levels], dim=1)
