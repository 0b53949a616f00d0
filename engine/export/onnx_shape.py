"""Layers that move values around: Concat, Slice, Flatten, Reshape, Crop, Tile, and Eltwise's merges."""

from __future__ import annotations

from engine.export.onnx_context import LayerContext, maps
from proto import caffe_pb2

Op = caffe_pb2.EltwiseParameter


@maps("Concat")
def concat(c: LayerContext) -> None:
    axis = c.layer.axis  # type: ignore[attr-defined]
    if axis == 0:
        c.no_free_batch("it concatenates along the batch axis")
    c.g.op("Concat", *c.bottoms, out=c.y, axis=axis)


@maps("Slice")
def slice_(c: LayerContext) -> None:
    axis = c.layer.axis  # type: ignore[attr-defined]
    if axis == 0:
        c.no_free_batch("it slices the batch axis")
    sizes = [shape[axis] for shape in c.top_shapes]
    c.g.multi("Split", [c.x, c.g.ints(sizes, "split")], c.tops, axis=axis)


def _same_batch(c: LayerContext) -> None:
    if c.top_shapes[0][:1] != c.bottom_shapes[0][:1]:
        c.no_free_batch("its top's first axis is not the bottom's (the batch)")


@maps("Flatten", "Reshape")
def reshape(c: LayerContext) -> None:
    _same_batch(c)
    c.g.reshape(c.x, c.top_shapes[0], out=c.y)


@maps("Crop")
def crop(c: LayerContext) -> None:
    region = c.layer.region  # type: ignore[attr-defined]
    axes = [i for i, s in enumerate(region) if (s.start, s.stop) != (0, c.bottom_shapes[0][i])]
    if 0 in axes:
        c.no_free_batch("it crops the batch axis")
    if not axes:
        c.g.op("Identity", c.x, out=c.y)
        return
    starts = c.g.ints([region[i].start for i in axes], "starts")
    ends = c.g.ints([region[i].stop for i in axes], "ends")
    c.g.op("Slice", c.x, starts, ends, c.g.ints(axes, "axes"), out=c.y)


@maps("Tile")
def tile(c: LayerContext) -> None:
    repeats = [1] * len(c.bottom_shapes[0])
    repeats[c.layer.axis] = c.layer.tiles  # type: ignore[attr-defined]
    c.g.op("Tile", c.x, c.g.ints(repeats, "repeats"), out=c.y)


@maps("Eltwise")
def eltwise(c: LayerContext) -> None:
    g, op = c.g, c.layer.op  # type: ignore[attr-defined]
    if op == Op.PROD:
        out = c.bottoms[0]
        for x in c.bottoms[1:]:
            out = g.op("Mul", out, x)
    elif op == Op.MAX:
        out = g.op("Max", *c.bottoms)
    else:  # SUM: c_0 x_0 + c_1 x_1 + ..., in the engine's order
        terms = [
            x if k == 1 else g.op("Mul", x, g.scalar(k, "coeff"))
            for x, k in zip(c.bottoms, c.layer.coeffs)  # type: ignore[attr-defined]
        ]
        out = terms[0]
        for t in terms[1:]:
            out = g.op("Add", out, t)
    g.op("Identity", out, out=c.y)
