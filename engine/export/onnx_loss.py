"""The losses of a TRAIN net and Accuracy, as the engine computes them: labels truncated to integers,
ignore_label masked, Caffe's normalizers (VALID, FULL, BATCH_SIZE, NONE; never below 1). Each
top is a scalar (Accuracy's per-class top: one value per class)."""

from __future__ import annotations

import numpy as np

from engine.export.onnx_context import LayerContext, maps
from engine.export.onnx_graph import Graph
from proto import caffe_pb2

FLOAT, INT64 = 1, 7  # onnx.TensorProto's element types
Mode = caffe_pb2.LossParameter
FLT_MIN = float(np.finfo(np.float32).tiny)
LOG_THRESHOLD = 1e-20  # MultinomialLogisticLoss' and InfogainLoss' clamp


def _sum(g: Graph, x: str) -> str:
    return g.op("ReduceSum", x, keepdims=0)


def _class_view(c: LayerContext) -> tuple[str, str, str]:
    """Scores as (outer, C, inner), integer labels as (outer, 1, inner), and the class axis' indices."""
    g, layer = c.g, c.layer
    channels, inner = layer.channels, layer.inner  # type: ignore[attr-defined]
    scores = g.op("Reshape", c.x, g.ints([-1, channels, inner]))
    labels = g.op("Cast", g.op("Reshape", c.bottoms[1], g.ints([-1, 1, inner])), to=INT64)
    classes = g.const(np.arange(channels).reshape(1, -1, 1), "classes", np.int64)
    return scores, labels, classes


def _valid(c: LayerContext, labels: str) -> str | None:
    ignore = c.layer.ignore_label  # type: ignore[attr-defined]
    if ignore is None:
        return None
    return c.g.op("Not", c.g.op("Equal", labels, c.g.const(np.int64(ignore), "ignore_label", np.int64)))


def _normalizer(c: LayerContext, mode: int, valid: str | None, positions: str, inner: int) -> str:
    """get_normalizer: ``positions`` holds the number of labelled positions (outer * inner)."""
    g = c.g
    count = g.op("Cast", g.op("Size", positions), to=FLOAT)
    if mode == Mode.VALID:
        if valid is not None:
            count = _sum(g, g.op("Cast", valid, to=FLOAT))
    elif mode == Mode.BATCH_SIZE:
        count = g.op("Div", count, g.scalar(inner, "inner"))
    elif mode == Mode.NONE:
        return g.scalar(1.0, "one")
    return g.op("Max", count, g.scalar(1.0, "one"))


def _masked(c: LayerContext, x: str, valid: str | None) -> str:
    if valid is None:
        return x
    return c.g.op("Where", valid, x, c.g.scalar(0.0, "zero"))


@maps("SoftmaxWithLoss")
def softmax_with_loss(c: LayerContext) -> None:
    g, layer = c.g, c.layer
    scores, labels, classes = _class_view(c)
    prob = g.op("Softmax", scores, axis=1)
    onehot = g.op("Cast", g.op("Equal", classes, labels), to=FLOAT)
    picked = g.op("ReduceSum", g.op("Mul", prob, onehot), g.ints([1], "axes"), keepdims=1)
    log_p = g.op("Log", g.op("Max", picked, g.scalar(FLT_MIN, "flt_min")))
    valid = _valid(c, labels)
    total = _sum(g, _masked(c, log_p, valid))
    norm = _normalizer(c, layer.normalization, valid, c.bottoms[1], layer.inner)  # type: ignore[attr-defined]
    g.op("Neg", g.op("Div", total, norm), out=c.y)
    if len(c.tops) > 1:
        g.reshape(prob, c.top_shapes[1], out=c.tops[1])


@maps("Accuracy")
def accuracy(c: LayerContext) -> None:
    """Correct when fewer than top_k other classes score >= the label's score (ties count against)."""
    g, layer = c.g, c.layer
    scores, labels, classes = _class_view(c)
    is_label = g.op("Equal", classes, labels)
    truth = g.op("ReduceSum", g.op("Mul", scores, g.op("Cast", is_label, to=FLOAT)), g.ints([1]), keepdims=1)
    at_least = g.op("Cast", g.op("GreaterOrEqual", scores, truth), to=FLOAT)
    rivals = g.op("Sub", g.op("ReduceSum", at_least, g.ints([1]), keepdims=1), g.scalar(1.0, "one"))
    correct = g.op("Less", rivals, g.scalar(layer.top_k, "top_k"))  # type: ignore[attr-defined]
    valid = _valid(c, labels)
    if valid is not None:
        correct = g.op("And", correct, valid)
    hits = _sum(g, g.op("Cast", correct, to=FLOAT))
    count = (
        g.op("Cast", g.op("Size", labels), to=FLOAT)
        if valid is None
        else _sum(g, g.op("Cast", valid, to=FLOAT))
    )
    g.op("Div", hits, g.op("Max", count, g.scalar(1.0, "one")), out=c.y)
    if len(c.tops) > 1:
        in_class = is_label if valid is None else g.op("And", is_label, valid)
        axes = g.ints([0, 2], "axes")
        nums = g.op("ReduceSum", g.op("Cast", in_class, to=FLOAT), axes, keepdims=0)
        wins = g.op("ReduceSum", g.op("Cast", g.op("And", in_class, correct), to=FLOAT), axes, keepdims=0)
        g.op("Div", wins, g.op("Max", nums, g.scalar(1.0, "one")), out=c.tops[1])


@maps("EuclideanLoss")
def euclidean(c: LayerContext) -> None:
    g = c.g
    diff = g.op("Sub", c.x, g.reshape(c.bottoms[1], c.bottom_shapes[0]))
    total = _sum(g, g.op("Mul", diff, diff))
    batch = g.op("Cast", g.op("Gather", g.op("Shape", c.x), g.ints([0]), axis=0), to=FLOAT)
    g.op("Div", total, g.op("Mul", g.op("Squeeze", batch), g.scalar(2.0, "two")), out=c.y)


@maps("SigmoidCrossEntropyLoss")
def sigmoid_cross_entropy(c: LayerContext) -> None:
    g, layer = c.g, c.layer
    x = c.x
    target = g.reshape(c.bottoms[1], c.bottom_shapes[0])
    softplus = g.op("Log", g.op("Add", g.op("Exp", g.op("Neg", g.op("Abs", x))), g.scalar(1.0, "one")))
    loss = g.op("Add", g.op("Sub", g.op("Relu", x), g.op("Mul", x, target)), softplus)
    valid = None
    if layer.ignore_label is not None:  # type: ignore[attr-defined]
        whole = g.op("Cast", target, to=INT64)
        valid = g.op("Not", g.op("Equal", whole, g.const(np.int64(layer.ignore_label), "ignore", np.int64)))  # type: ignore[attr-defined]
    total = _sum(g, _masked(c, loss, valid))
    norm = _normalizer(c, layer.normalization, valid, x, layer.inner)  # type: ignore[attr-defined]
    g.op("Div", total, norm, out=c.y)


@maps("ContrastiveLoss")
def contrastive(c: LayerContext) -> None:
    g, layer = c.g, c.layer
    a = g.op("Flatten", c.x, axis=1)
    b = g.op("Flatten", c.bottoms[1], axis=1)
    diff = g.op("Sub", a, b)
    dist_sq = g.op("ReduceSum", g.op("Mul", diff, diff), g.ints([1]), keepdims=0)
    label = g.op("Cast", g.op("Flatten", c.bottoms[2], axis=0), to=INT64)
    similar = g.op(
        "Not", g.op("Equal", g.op("Squeeze", label, g.ints([0])), g.const(np.int64(0), "zero", np.int64))
    )
    margin = g.scalar(float(layer.margin), "margin")  # type: ignore[attr-defined]
    zero = g.scalar(0.0, "zero")
    if layer.legacy:  # type: ignore[attr-defined]
        apart = g.op("Max", g.op("Sub", margin, dist_sq), zero)
    else:
        gap = g.op("Max", g.op("Sub", margin, g.op("Sqrt", dist_sq)), zero)
        apart = g.op("Mul", gap, gap)
    total = _sum(g, g.op("Where", similar, dist_sq, apart))
    num = g.op("Cast", g.op("Size", dist_sq), to=FLOAT)
    g.op("Div", g.op("Div", total, num), g.scalar(2.0, "two"), out=c.y)


@maps("HingeLoss")
def hinge(c: LayerContext) -> None:
    g, layer = c.g, c.layer
    dim = layer.dim  # type: ignore[attr-defined]
    scores = g.op("Reshape", c.x, g.ints([-1, dim]))
    labels = g.op("Cast", g.op("Reshape", c.bottoms[1], g.ints([-1, 1])), to=INT64)
    classes = g.const(np.arange(dim).reshape(1, -1), "classes", np.int64)
    sign = g.op("Where", g.op("Equal", classes, labels), g.scalar(-1.0, "minus_one"), g.scalar(1.0, "one"))
    margin = g.op("Relu", g.op("Add", g.op("Mul", sign, scores), g.scalar(1.0, "one")))
    l1 = layer.norm == caffe_pb2.HingeLossParameter.L1  # type: ignore[attr-defined]
    total = _sum(g, margin if l1 else g.op("Mul", margin, margin))
    num = g.op("Cast", g.op("Size", labels), to=FLOAT)
    g.op("Div", total, num, out=c.y)


@maps("MultinomialLogisticLoss")
def multinomial_logistic(c: LayerContext) -> None:
    g, layer = c.g, c.layer
    dim = layer.dim  # type: ignore[attr-defined]
    prob = g.op("Reshape", c.x, g.ints([-1, dim]))
    labels = g.op("Cast", g.op("Reshape", c.bottoms[1], g.ints([-1, 1])), to=INT64)
    picked = g.op("GatherElements", prob, labels, axis=1)
    log_p = g.op("Log", g.op("Max", picked, g.scalar(LOG_THRESHOLD, "threshold")))
    num = g.op("Cast", g.op("Size", labels), to=FLOAT)
    g.op("Neg", g.op("Div", _sum(g, log_p), num), out=c.y)


@maps("InfogainLoss")
def infogain(c: LayerContext) -> None:
    g, layer = c.g, c.layer
    channels = layer.channels  # type: ignore[attr-defined]
    scores, labels, _ = _class_view(c)
    if len(c.bottoms) > 2:
        h = g.op("Reshape", c.bottoms[2], g.ints([channels, channels]))
    else:
        h = g.const(np.asarray(layer.infogain, np.float32).reshape(channels, channels), "H")  # type: ignore[attr-defined]
    prob = g.op("Softmax", scores, axis=1)
    valid = _valid(c, labels)
    safe = labels if valid is None else g.op("Where", valid, labels, g.const(np.int64(0), "zero", np.int64))
    rows = g.op("Gather", h, g.op("Squeeze", safe, g.ints([1])), axis=0)  # (outer, inner, C)
    rows = g.op("Transpose", rows, perm=[0, 2, 1])
    log_p = g.op("Log", g.op("Max", prob, g.scalar(LOG_THRESHOLD, "threshold")))
    terms = g.op("Mul", rows, log_p)
    if valid is not None:
        terms = g.op("Mul", terms, g.op("Cast", valid, to=FLOAT))
    norm = _normalizer(c, layer.normalization, valid, c.bottoms[1], layer.inner)  # type: ignore[attr-defined]
    g.op("Neg", g.op("Div", _sum(g, terms), norm), out=c.y)
    if len(c.tops) > 1:
        g.reshape(prob, c.top_shapes[1], out=c.tops[1])
