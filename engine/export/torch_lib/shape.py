"""Layers that move values: Concat, Slice, Split, Flatten, Reshape, Crop, Tile, Eltwise, Softmax,
Reduction, ArgMax, Embed and DummyData, as Caffe computes them."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from engine.export.torch_lib.common import add_blobs, caffe_axis, count


class Concat(nn.Module):
    def __init__(self, axis: int = 1) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return xs[0] if len(xs) == 1 else torch.cat(xs, dim=self.axis)


class Slice(nn.Module):
    """Cuts at ``points`` along ``axis``, or into ``tops`` equal parts without them."""

    def __init__(self, axis: int, points: Any, tops: int) -> None:
        super().__init__()
        self.axis, self.points, self.tops = axis, tuple(points), tops

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        size = x.shape[self.axis]
        cuts = self.points or tuple(size // self.tops * i for i in range(1, self.tops))
        edges = (0, *cuts, size)
        return tuple(x.narrow(self.axis, a, b - a) for a, b in zip(edges, edges[1:]))


class Split(nn.Module):
    """The same blob under several names (autograd sums their gradients, as Caffe's Split does)."""

    def __init__(self, tops: int) -> None:
        super().__init__()
        self.tops = tops

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (x,) * self.tops


class Flatten(nn.Module):
    """Merges the axes ``axis`` .. ``end_axis`` (inclusive)."""

    def __init__(self, axis: int = 1, end_axis: int = -1) -> None:
        super().__init__()
        self.axis, self.end_axis = axis, end_axis

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(x, self.axis, self.end_axis)


class Reshape(nn.Module):
    """Replaces axes ``axis`` .. ``axis + num_axes - 1`` by ``dims`` (0 copies a dim, -1 is inferred)."""

    helpers = ("count",)

    def __init__(self, dims: Any, axis: int = 0, num_axes: int = -1) -> None:
        super().__init__()
        self.dims, self.axis, self.num_axes = tuple(dims), axis, num_axes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.dim()
        start = self.axis if self.axis >= 0 else n + self.axis + 1
        end = n if self.num_axes == -1 else start + self.num_axes
        new = [x.shape[start + i] if d == 0 else d for i, d in enumerate(self.dims)]
        if -1 in new:
            known = count(x.shape, 0, start) * count(x.shape, end) * math.prod(d for d in new if d != -1)
            new[new.index(-1)] = x.numel() // known
        return x.reshape(*x.shape[:start], *new, *x.shape[end:])


class Crop(nn.Module):
    """Cuts the first bottom to the second's shape on the axes from ``axis`` on, starting at ``offsets``."""

    helpers = ("caffe_axis",)

    def __init__(self, axis: int = 2, offsets: Any = ()) -> None:
        super().__init__()
        self.axis, self.offsets = axis, tuple(offsets)

    def forward(self, x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        start = caffe_axis(self.axis, x.dim())
        for i in range(start, x.dim()):
            offset = (
                self.offsets[0] if len(self.offsets) == 1 else self.offsets[i - start] if self.offsets else 0
            )
            x = x.narrow(i, offset, like.shape[i])
        return x


class Tile(nn.Module):
    """``tiles`` copies of the block from ``axis`` on, along ``axis``."""

    def __init__(self, axis: int, tiles: int) -> None:
        super().__init__()
        self.axis, self.tiles = axis, tiles

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        axis = self.axis + x.dim() if self.axis < 0 else self.axis
        block = x.reshape(*x.shape[:axis], 1, -1).expand(*x.shape[:axis], self.tiles, -1)
        return block.reshape(*x.shape[:axis], self.tiles * x.shape[axis], *x.shape[axis + 1 :])


class Eltwise(nn.Module):
    """SUM (with coefficients), PROD or MAX of the bottoms; MAX ties go as Caffe's comparisons send them
    (bottom 1 over bottom 0, a later bottom only when strictly greater)."""

    def __init__(self, operation: str = "SUM", coeffs: Any = ()) -> None:
        super().__init__()
        self.operation, self.coeffs = operation, tuple(coeffs)

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        if self.operation == "PROD":
            out = xs[0] * xs[1]
            for x in xs[2:]:
                out = out * x
            return out
        if self.operation == "SUM":
            coeffs = self.coeffs or (1.0,) * len(xs)
            out = xs[0] * coeffs[0] if coeffs[0] != 1 else xs[0]
            for c, x in zip(coeffs[1:], xs[1:]):
                out = out + (x * c if c != 1 else x)
            return out
        out = torch.where(xs[0] > xs[1], xs[0], xs[1])
        for x in xs[2:]:
            out = torch.where(x > out, x, out)
        return out


class Softmax(nn.Module):
    def __init__(self, axis: int = 1) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=self.axis)


class Reduction(nn.Module):
    """SUM, ASUM, SUMSQ or MEAN over all axes from ``axis`` on, times ``coeff``."""

    helpers = ("caffe_axis",)

    def __init__(self, operation: str = "SUM", axis: int = 0, coeff: float = 1.0) -> None:
        super().__init__()
        self.operation, self.axis, self.coeff = operation, axis, coeff

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        axis = caffe_axis(self.axis, x.dim())
        flat = x.reshape(*x.shape[:axis], -1)
        if self.operation == "ASUM":
            flat = torch.abs(flat)
        elif self.operation == "SUMSQ":
            flat = flat * flat
        coeff = self.coeff / flat.shape[-1] if self.operation == "MEAN" and flat.shape[-1] else self.coeff
        out = flat.sum(dim=-1)
        return out * coeff if coeff != 1 else out


class ArgMax(nn.Module):
    """The indices (or values, out_max_val) of the top_k largest entries; ties go to the higher index."""

    def __init__(self, top_k: int = 1, out_max_val: bool = False, axis: int | None = None) -> None:
        super().__init__()
        self.top_k, self.out_max_val, self.axis = top_k, out_max_val, axis

    def best(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        flipped = x.flip(-1)
        order = torch.argsort(-flipped, dim=-1, stable=True)[..., : self.top_k]
        return (x.shape[-1] - 1 - order).to(x.dtype), torch.gather(flipped, -1, order)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.detach()
        if self.axis is not None:
            indices, values = self.best(x.movedim(self.axis, -1))
            return (values if self.out_max_val else indices).movedim(-1, self.axis)
        indices, values = self.best(x.reshape(x.shape[0], -1))
        rows = torch.stack([indices, values], 1) if self.out_max_val else indices[:, None]
        return rows.reshape(*rows.shape, *(1,) * (x.dim() - 3))


class Embed(nn.Module):
    """y = W[ids] + b, W of shape (input_dim, num_output); the ids get no gradient."""

    weight: torch.Tensor
    bias: torch.Tensor
    blob_names: tuple[str, ...]

    helpers = ("add_blobs",)

    def __init__(self, blobs: Any) -> None:
        super().__init__()
        add_blobs(self, blobs)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        y = self.weight[ids.detach().long()]
        return y + self.bias if "bias" in self.blob_names else y


class DummyData(nn.Module):
    """Tops of fixed shapes: constant fillers give their value, gaussian and uniform draw anew each
    forward (other fillers are drawn as gaussian(0, std)). Given tensors are passed through instead."""

    def __init__(self, shapes: Any, fillers: Any) -> None:
        super().__init__()
        self.shapes, self.fillers = [tuple(s) for s in shapes], list(fillers)

    def forward(self, *given: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        out: list[torch.Tensor] = []
        for i, shape in enumerate(self.shapes):
            value = given[i] if i < len(given) else None
            if value is not None:
                out.append(value)
                continue
            kind, a, b = self.fillers[i]
            if kind == "constant":
                out.append(torch.full(shape, a))
            elif kind == "uniform":
                out.append(torch.rand(shape) * (b - a) + a)
            else:
                out.append(torch.randn(shape) * b + a)
        return tuple(out)
