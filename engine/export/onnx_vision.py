"""Convolution, Deconvolution, Pooling and SPP with Caffe's geometry, spelt as explicit ONNX pads.

Caffe's pooling rounds its output size up and drops a last window that would start in the padding;
ONNX's ceil_mode does neither the same way, so the exporter always writes the exact pads: before, the
pad; after, as far as the last window reaches (cutting the input when windows stop short of its end).
AVE's divisor counts the padding but not beyond the padded image (pooling_layer.cpp): ONNX's
AveragePool without padding divides by the image elements of each window, so the result is multiplied
by a constant map (image elements / Caffe's divisor) per output position.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.export import ExportError
from engine.export.onnx_context import LayerContext, maps
from proto import caffe_pb2

P = caffe_pb2.PoolingParameter


def _conv_attrs(c: LayerContext, far: tuple[int, ...]) -> dict[str, object]:
    layer = c.layer
    if layer.channel_axis != 1:  # type: ignore[attr-defined]
        raise c.refuse("ONNX convolutions take channels on axis 1 only")
    return {
        "kernel_shape": list(layer.kernel),  # type: ignore[attr-defined]
        "strides": list(layer.stride),  # type: ignore[attr-defined]
        "dilations": list(layer.dilation),  # type: ignore[attr-defined]
        "pads": [*layer.pad, *(p + f for p, f in zip(layer.pad, far))],  # type: ignore[attr-defined]
        "group": layer.group,  # type: ignore[attr-defined]
    }


@maps("Convolution")
def convolution(c: LayerContext) -> None:
    spatial = c.bottom_shapes[0][2:]
    attrs = _conv_attrs(c, c.layer.far_padding(spatial))  # type: ignore[attr-defined]
    c.g.op("Conv", *c.bottoms[:1], *c.params[:2], out=c.y, **attrs)
    _other_bottoms(c, "Conv", attrs)


@maps("Deconvolution")
def deconvolution(c: LayerContext) -> None:
    attrs = _conv_attrs(c, (0,) * (len(c.bottom_shapes[0]) - 2))
    c.g.op("ConvTranspose", c.x, *c.params[:2], out=c.y, **attrs)
    _other_bottoms(c, "ConvTranspose", attrs)


def _other_bottoms(c: LayerContext, op: str, attrs: dict[str, object]) -> None:
    """Caffe's convolutions take several bottoms, each convolved with the same weights."""
    for x, y in zip(c.bottoms[1:], c.tops[1:]):
        c.g.op(op, x, *c.params[:2], out=y, **attrs)


@maps("Pooling")
def pooling(c: LayerContext) -> None:
    layer, g = c.layer, c.g
    method = c.p.pooling_param.pool
    size = c.bottom_shapes[0][2:]
    kernel, stride, pad = layer.kernel, layer.stride, layer.pad  # type: ignore[attr-defined]
    pooled = c.top_shapes[0][2:]
    if method == P.STOCHASTIC and c.train:
        raise c.refuse("STOCHASTIC pooling samples at random while training; ONNX has no equivalent")
    starts = [np.arange(n) * s - p for n, s, p in zip(pooled, stride, pad)]
    if any(st[-1] >= h for st, h in zip(starts, size)):
        raise c.refuse("its last pooling window lies wholly past the input (stride larger than the kernel)")
    ends = [(n - 1) * s + k - p - h for n, s, k, p, h in zip(pooled, stride, kernel, pad, size)]
    x = c.x
    if any(e < 0 for e in ends) and len(c.tops) > 1:
        raise c.refuse("its windows stop short of the input's end; ONNX's indices would not be Caffe's mask")
    if any(e < 0 for e in ends):  # windows stop short of the input's end: cut it
        cut = [h + min(e, 0) for h, e in zip(size, ends)]
        x = g.op("Slice", x, g.ints([0, 0]), g.ints(cut), g.ints([2, 3]))
    attrs: dict[str, Any] = {
        "kernel_shape": list(kernel),
        "strides": list(stride),
        "pads": [*pad, *(max(e, 0) for e in ends)],
    }
    if method == P.MAX:
        outs = [c.y] if len(c.tops) == 1 else [c.y, g.fresh(f"{c.p.name}/indices")]
        g.multi("MaxPool", [x], outs, **attrs)
        if len(c.tops) > 1:  # Caffe's mask: h * W + w within the image, as a float
            plane = g.op("Mod", outs[1], g.const(np.int64(size[0] * size[1]), "plane", np.int64))
            g.op("Cast", plane, out=c.tops[1], to=1)
        return
    if method == P.STOCHASTIC:  # TEST: sum(x^2) / sum(x) over each window (no padding in Caffe)
        squares = g.op("AveragePool", g.op("Mul", x, x), **attrs)
        g.op("Div", squares, g.op("AveragePool", x, **attrs), out=c.y)
        return
    mean = g.op("AveragePool", x, count_include_pad=0, **attrs)
    inside = [np.minimum(st + k, h) - np.maximum(st, 0) for st, k, h in zip(starts, kernel, size)]
    caffe = [np.minimum(st + k, h + p) - st for st, k, h, p in zip(starts, kernel, size, pad)]
    ratio = np.outer(*inside) / np.outer(*caffe)
    if np.all(ratio == 1):
        g.op("Identity", mean, out=c.y)
    else:
        g.op("Mul", mean, g.const(ratio.reshape(1, 1, *ratio.shape), "divisor_ratio"), out=c.y)


@maps("SPP")
def spp(c: LayerContext) -> None:
    """Each pyramid level is the engine's own Pooling layer (its geometry set up for this input size),
    exported as Pooling is; the levels flattened and joined, or a single level's top as it is."""
    levels = list(zip(c.layer.levels, c.layer.outputs))  # type: ignore[attr-defined]
    if c.p.spp_param.pool == caffe_pb2.SPPParameter.STOCHASTIC and c.train:
        raise c.refuse("STOCHASTIC pooling samples at random while training; ONNX has no equivalent")
    pieces = []
    for index, (level, out) in enumerate(levels):
        y = c.y if len(levels) == 1 else c.g.fresh(f"{c.p.name}/level{index}")
        context = LayerContext(c.g, level, [c.x], [y], c.bottom_shapes[:1], [tuple(out.shape)], [], [])
        try:
            pooling(context)
        except ExportError as exc:  # named after the SPP layer, not its level
            raise c.refuse(f"pyramid level {index}: {str(exc).split('): ', 1)[-1]}") from None
        if len(levels) > 1:
            pieces.append(c.g.op("Flatten", y, axis=1))
    if pieces:
        c.g.op("Concat", *pieces, axis=1, out=c.y)
