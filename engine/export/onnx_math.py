"""Layers that compute across an axis: InnerProduct (axis, transpose), Embed, Softmax, ArgMax and
Reduction."""

from __future__ import annotations

from engine.export.onnx_context import LayerContext, maps
from proto import caffe_pb2

FLOAT, INT64 = 1, 7  # onnx.TensorProto's element types
Op = caffe_pb2.ReductionParameter


@maps("InnerProduct")
def inner_product(c: LayerContext) -> None:
    """y = x W^T + b with x read as (M, K) around ``axis``; W is (K, N) when ``transpose``."""
    g, layer = c.g, c.layer
    axis = layer.axis  # type: ignore[attr-defined]
    if axis == 0:
        c.no_free_batch("its weights span the batch axis (axis: 0)")
    shape = c.bottom_shapes[0]
    flat = c.x if (len(shape) == 2 and axis == 1) else g.op("Flatten", c.x, axis=axis)
    operands = c.params[:2] if layer.bias_term else c.params[:1]  # type: ignore[attr-defined]
    trans_b = 0 if layer.transpose else 1  # type: ignore[attr-defined]
    if len(c.top_shapes[0]) == 2 and axis == 1:
        g.op("Gemm", flat, *operands, out=c.y, transB=trans_b)
    else:
        g.reshape(g.op("Gemm", flat, *operands, transB=trans_b), c.top_shapes[0], out=c.y)


@maps("Embed")
def embed(c: LayerContext) -> None:
    """Rows of W picked by the (integer-valued) inputs, plus the bias."""
    g = c.g
    ids = g.op("Cast", c.x, to=INT64)
    if c.layer.bias_term:  # type: ignore[attr-defined]
        g.op("Add", g.op("Gather", c.params[0], ids, axis=0), c.params[1], out=c.y)
    else:
        g.op("Gather", c.params[0], ids, out=c.y, axis=0)


@maps("Softmax")
def softmax(c: LayerContext) -> None:
    c.g.op("Softmax", c.x, out=c.y, axis=c.layer.axis)  # type: ignore[attr-defined]


def top_k(c: LayerContext, x: str, axis: int, k: int) -> tuple[str, str]:
    """Values and (float) indices of the k largest along ``axis``, ties to the higher index as Caffe's
    sort of (value, index) pairs: TopK on the reversed axis (where ties go to the lower index)."""
    g = c.g
    flipped = g.op("Slice", x, g.ints([-1]), g.ints([-(2**62)]), g.ints([axis]), g.ints([-1]))
    values, order = g.multi("TopK", [flipped, g.ints([k], "k")], 2, axis=axis, largest=1, sorted=1)
    size = g.op("Gather", g.op("Shape", x), g.ints([axis], "axis"), axis=0)
    last = g.op("Sub", size, g.ints([1], "one"))
    index = g.op("Cast", g.op("Sub", last, order), to=FLOAT)
    return values, index


@maps("ArgMax")
def argmax(c: LayerContext) -> None:
    g, layer = c.g, c.layer
    k, with_values = layer.top_k, layer.out_max_val  # type: ignore[attr-defined]
    if layer.has_axis:  # type: ignore[attr-defined]
        values, index = top_k(c, c.x, layer.axis, k)  # type: ignore[attr-defined]
        g.op("Identity", values if with_values else index, out=c.y)
        return
    flat = g.op("Flatten", c.x, axis=1)
    values, index = top_k(c, flat, 1, k)
    rows = [g.op("Unsqueeze", index, g.ints([1], "axes"))]
    if with_values:
        rows.append(g.op("Unsqueeze", values, g.ints([1], "axes")))
    joined = rows[0] if len(rows) == 1 else g.op("Concat", *rows, axis=1)
    g.reshape(joined, c.top_shapes[0], out=c.y)


@maps("Reduction")
def reduction(c: LayerContext) -> None:
    g, layer = c.g, c.layer
    ndim = len(c.bottom_shapes[0])
    axis = len(c.top_shapes[0])  # Caffe reduces every axis from `axis` on
    if axis == 0 and layer.op == Op.MEAN:  # type: ignore[attr-defined]
        c.no_free_batch("its MEAN over the batch axis divides by the batch the net was exported at")
    x = c.x
    if layer.op == Op.ASUM:  # type: ignore[attr-defined]
        x = g.op("Abs", x)
    elif layer.op == Op.SUMSQ:  # type: ignore[attr-defined]
        x = g.op("Mul", x, x)
    total = g.op("ReduceSum", x, g.ints(list(range(axis, ndim)), "axes"), keepdims=0)
    coeff = layer.coeff  # type: ignore[attr-defined]
    if coeff == 1:
        g.op("Identity", total, out=c.y)
    else:
        g.op("Mul", total, g.scalar(coeff, "coeff"), out=c.y)
