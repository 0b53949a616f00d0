"""Normalisations and per-channel affine maps: LRN, BatchNorm (with its stored scale factor), Scale,
Bias and MVN, each written as the engine computes it."""

from __future__ import annotations

import numpy as np

from engine.export.onnx_context import LayerContext, maps
from proto import caffe_pb2


@maps("LRN")
def lrn(c: LayerContext) -> None:
    """ACROSS_CHANNELS is ONNX's LRN (the same window and formula); WITHIN_CHANNEL is Caffe's own
    composition: 1 + alpha * (zero-padded n x n mean of x^2), to the power -beta, times x."""
    p, g = c.p.lrn_param, c.g
    if p.norm_region == caffe_pb2.LRNParameter.ACROSS_CHANNELS:
        g.op("LRN", c.x, out=c.y, size=p.local_size, alpha=p.alpha, beta=p.beta, bias=p.k)
        return
    half = (p.local_size - 1) // 2
    mean = g.op(
        "AveragePool", g.op("Mul", c.x, c.x), kernel_shape=[p.local_size] * 2, strides=[1, 1],
        pads=[half] * 4, count_include_pad=1,
    )  # fmt: skip
    scale = g.op("Add", g.op("Mul", mean, g.scalar(p.alpha, "alpha")), g.scalar(1.0, "one"))
    g.op("Mul", c.x, g.op("Pow", scale, g.scalar(-p.beta, "minus_beta")), out=c.y)


def _channel_shape(shape: tuple[int, ...]) -> list[int]:
    """Per-channel values broadcast over (N, C, ...): shape (1, C, 1, ...) (one channel for 1 axis)."""
    return [1] if len(shape) == 1 else [1, shape[1], *([1] * (len(shape) - 2))]


@maps("BatchNorm")
def batch_norm(c: LayerContext) -> None:
    layer, g = c.layer, c.g
    shape = c.bottom_shapes[0]
    eps = layer.eps  # type: ignore[attr-defined]
    if layer.use_global_stats:  # type: ignore[attr-defined]
        mean_sum, var_sum, factor = c.param_arrays[:3]
        inverse = np.float32(0) if factor[0] == 0 else np.float32(1) / factor[0]
        mean = (mean_sum * inverse).astype(np.float32)
        std = np.sqrt((var_sum * inverse).astype(np.float32) + np.float32(eps))
        centered = g.op("Sub", c.x, g.const(mean.reshape(_channel_shape(shape)), "mean"))
        g.op("Div", centered, g.const(std.reshape(_channel_shape(shape)), "std"), out=c.y)
        return
    axes = [0, *range(2, len(shape))] if len(shape) > 1 else [0]
    mean = g.op("ReduceMean", c.x, g.ints(axes, "axes"), keepdims=1)
    centered = g.op("Sub", c.x, mean)
    var = g.op("ReduceMean", g.op("Mul", centered, centered), g.ints(axes, "axes"), keepdims=1)
    std = g.op("Sqrt", g.op("Add", var, g.scalar(eps, "eps")))
    g.op("Div", centered, std, out=c.y)


def _operand(c: LayerContext, name: str, shape: tuple[int, ...], axis: int) -> str:
    ndim = len(c.bottom_shapes[0])
    start = 0 if not shape else (axis + ndim if axis < 0 else axis)
    return c.broadcast(name, shape, start, ndim)


@maps("Scale")
def scale(c: LayerContext) -> None:
    p, g = c.p.scale_param, c.g
    if len(c.bottoms) > 1:
        factor, factor_shape, bias_index = c.bottoms[1], c.bottom_shapes[1], 0
    else:
        factor, factor_shape, bias_index = c.params[0], c.param_arrays[0].shape, 1
        _no_learned_batch(c, factor_shape, p.axis)
    s = _operand(c, factor, tuple(factor_shape), p.axis)
    if not p.bias_term:
        g.op("Mul", c.x, s, out=c.y)
        return
    b = _operand(c, c.params[bias_index], c.param_arrays[bias_index].shape, p.axis)
    g.op("Add", g.op("Mul", c.x, s), b, out=c.y)


@maps("Bias")
def bias(c: LayerContext) -> None:
    if len(c.bottoms) > 1:
        b, shape = c.bottoms[1], tuple(c.bottom_shapes[1])
    else:
        b, shape = c.params[0], c.param_arrays[0].shape
        _no_learned_batch(c, shape, c.p.bias_param.axis)
    c.g.op("Add", c.x, _operand(c, b, shape, c.p.bias_param.axis), out=c.y)


def _no_learned_batch(c: LayerContext, shape: tuple[int, ...], axis: int) -> None:
    """A learned blob laid from the batch axis on has one entry per example of the export-time batch."""
    if shape and axis % len(c.bottom_shapes[0]) == 0:
        c.no_free_batch(f"its learned {c.p.type.lower()} spans the batch axis (axis: {axis})")


@maps("MVN")
def mvn(c: LayerContext) -> None:
    p, g = c.p.mvn_param, c.g
    ndim = len(c.bottom_shapes[0])
    first = 1 if p.across_channels else 2
    axes = g.ints(list(range(first, ndim)), "axes")
    if first >= ndim:  # one value per group: the mean is the value itself
        centered = g.op("Sub", c.x, c.x)
    else:
        centered = g.op("Sub", c.x, g.op("ReduceMean", c.x, axes, keepdims=1))
    if not p.normalize_variance:
        g.op("Identity", centered, out=c.y)
        return
    if first >= ndim:
        std = g.op("Abs", centered)
    else:
        std = g.op("Sqrt", g.op("ReduceMean", g.op("Mul", centered, centered), axes, keepdims=1))
    g.op("Div", centered, g.op("Add", std, g.scalar(p.eps, "eps")), out=c.y)
