"""Same-shape neurons: ReLU (negative_slope), PReLU, ELU, Clip, Sigmoid, TanH, Swish, AbsVal, BNLL,
Power, Exp, Log and Threshold, each in the engine's own formula (Caffe's)."""

from __future__ import annotations

import numpy as np

from engine.export.onnx_context import LayerContext, maps

FLOAT = 1  # onnx.TensorProto.FLOAT


@maps("ReLU")
def relu(c: LayerContext) -> None:
    slope = c.p.relu_param.negative_slope
    if slope == 0:
        c.g.op("Relu", c.x, out=c.y)
    else:
        c.g.op("LeakyRelu", c.x, out=c.y, alpha=slope)


@maps("PReLU")
def prelu(c: LayerContext) -> None:
    shape, ndim = c.param_arrays[0].shape, len(c.bottom_shapes[0])
    slope = c.params[0] if not shape else c.broadcast(c.params[0], shape, 1, ndim)
    c.g.op("PRelu", c.x, slope, out=c.y)


@maps("ELU")
def elu(c: LayerContext) -> None:
    c.g.op("Elu", c.x, out=c.y, alpha=c.p.elu_param.alpha)


@maps("Clip")
def clip(c: LayerContext) -> None:
    p = c.p.clip_param
    c.g.op("Clip", c.x, c.g.scalar(p.min, "min"), c.g.scalar(p.max, "max"), out=c.y)


@maps("Sigmoid")
def sigmoid(c: LayerContext) -> None:
    c.g.op("Sigmoid", c.x, out=c.y)


@maps("TanH")
def tanh(c: LayerContext) -> None:
    c.g.op("Tanh", c.x, out=c.y)


@maps("Swish")
def swish(c: LayerContext) -> None:
    beta = c.p.swish_param.beta
    inner = c.x if beta == 1 else c.g.op("Mul", c.x, c.g.scalar(beta, "beta"))
    c.g.op("Mul", c.x, c.g.op("Sigmoid", inner), out=c.y)


@maps("AbsVal")
def absval(c: LayerContext) -> None:
    c.g.op("Abs", c.x, out=c.y)


@maps("BNLL")
def bnll(c: LayerContext) -> None:
    """max(x, 0) + log(1 + exp(-|x|)): log(1 + exp(x)) without overflow, as Caffe."""
    g = c.g
    tail = g.op("Log", g.op("Add", g.op("Exp", g.op("Neg", g.op("Abs", c.x))), g.scalar(1.0, "one")))
    g.op("Add", g.op("Relu", c.x), tail, out=c.y)


def _affine(c: LayerContext, scale: float, shift: float) -> str:
    g, x = c.g, c.x
    if scale != 1:
        x = g.op("Mul", x, g.scalar(scale, "scale"))
    if shift != 0:
        x = g.op("Add", x, g.scalar(shift, "shift"))
    return x


@maps("Power")
def power(c: LayerContext) -> None:
    p, g = c.p.power_param, c.g
    if p.power * p.scale == 0:  # the input does not matter: Caffe writes shift ^ power everywhere
        with np.errstate(divide="ignore", invalid="ignore"):  # C's pow: 0^-1 = inf, (-2)^0.5 = nan
            value = 1.0 if p.power == 0 else float(np.power(np.float32(p.shift), np.float32(p.power)))
        g.op("Expand", g.scalar(value, "value"), g.op("Shape", c.x), out=c.y)
        return
    t = _affine(c, p.scale, p.shift)
    if p.power == 1:
        g.op("Identity", t, out=c.y)
    else:
        g.op("Pow", t, g.scalar(p.power, "power"), out=c.y)


@maps("Exp")
def exp(c: LayerContext) -> None:
    layer, g = c.layer, c.g
    inner, outer = layer.inner_scale, layer.outer_scale  # type: ignore[attr-defined]
    t = c.x if inner == 1 else g.op("Mul", c.x, g.scalar(inner, "inner_scale"))
    if outer == 1:
        g.op("Exp", t, out=c.y)
    else:
        g.op("Mul", g.op("Exp", t), g.scalar(outer, "outer_scale"), out=c.y)


@maps("Log")
def log(c: LayerContext) -> None:
    p, g = c.p.log_param, c.g
    base_scale = c.layer.base_scale  # type: ignore[attr-defined]
    t = g.op("Log", _affine(c, p.scale, p.shift))
    if base_scale == 1:
        g.op("Identity", t, out=c.y)
    else:
        g.op("Mul", t, g.scalar(base_scale, "base_scale"), out=c.y)


@maps("Threshold")
def threshold(c: LayerContext) -> None:
    above = c.g.op("Greater", c.x, c.g.scalar(c.p.threshold_param.threshold, "threshold"))
    c.g.op("Cast", above, out=c.y, to=FLOAT)
