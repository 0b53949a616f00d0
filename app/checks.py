"""Cheap checks that refuse a bad edit before it reaches the document.

Qt-free. These are the checks the engine makes when it sets a layer up that need no blob
shapes (num_output > 0, an odd LRN size, a dropout ratio below 1, ...), plus what keeps the
document readable: required fields set, finite numbers, and a layer that reads back from its
own prototxt. An edit is refused only for a problem it *introduces*, so a net opened with a
problem elsewhere in a layer can still be edited and repaired field by field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from google.protobuf import text_format
from google.protobuf.message import Message

from engine.solvers import solver_types
from engine.solvers.lr_policy import POLICIES
from proto import caffe10, caffe_pb2

Layer = caffe_pb2.LayerParameter
Rule = Callable[[Layer], Iterator[str]]

# Learnable blobs per type, for "too many param { } blocks" (Caffe's "Too many params specified").
_PARAM_BLOBS = {
    "Convolution": lambda l: 1 + l.convolution_param.bias_term,
    "Deconvolution": lambda l: 1 + l.convolution_param.bias_term,
    "InnerProduct": lambda l: 1 + l.inner_product_param.bias_term,
    "Embed": lambda l: 1 + l.embed_param.bias_term,
    "Scale": lambda l: 1 + l.scale_param.bias_term,
    "Bias": lambda l: 1,
    "PReLU": lambda l: 1,
    "Parameter": lambda l: 1,
    "BatchNorm": lambda l: 3,
}


def _positive(path: str, values) -> Iterator[str]:
    for value in values if isinstance(values, (list, tuple)) else [values]:
        if value <= 0:
            yield f"{path} must be positive (got {value})"


def _conv(l: Layer) -> Iterator[str]:
    p = l.convolution_param
    if l.type != "Im2col":
        yield from _positive("num_output", p.num_output)
    yield from _positive("kernel_size", list(p.kernel_size))
    yield from _positive("stride", list(p.stride))
    yield from _positive("dilation", list(p.dilation))
    for name in ("kernel_h", "kernel_w", "stride_h", "stride_w"):
        if p.HasField(name):
            yield from _positive(name, getattr(p, name))
    if p.group <= 0:
        yield f"group must be positive (got {p.group})"
    elif l.type != "Im2col" and p.num_output % p.group:
        yield f"num_output {p.num_output} must be a multiple of group {p.group}"
    if p.kernel_size and (p.HasField("kernel_h") or p.HasField("kernel_w")):
        yield "give kernel_size or kernel_h and kernel_w, not both"


def _pooling(l: Layer) -> Iterator[str]:
    p = l.pooling_param
    if p.HasField("kernel_size"):
        yield from _positive("kernel_size", p.kernel_size)
    if p.HasField("stride"):
        yield from _positive("stride", p.stride)
    if p.HasField("kernel_size") and p.pad >= p.kernel_size > 0:
        yield f"pad {p.pad} must be smaller than kernel_size {p.kernel_size}"
    if p.global_pooling and (p.HasField("kernel_size") or p.HasField("kernel_h")):
        yield "global_pooling takes no kernel size"


def _reshape(l: Layer) -> Iterator[str]:
    dims = list(l.reshape_param.shape.dim)
    if any(d < -1 for d in dims):
        yield f"shape {dims} may hold only dims >= 0 and a single -1"
    if dims.count(-1) > 1:
        yield f"shape {dims} has several -1 dims; at most one can be inferred"


def _clip(l: Layer) -> Iterator[str]:
    if l.HasField("clip_param") and l.clip_param.min > l.clip_param.max:
        yield f"clip min {l.clip_param.min:g} is above max {l.clip_param.max:g}"


_TYPE_RULES: dict[str, Rule] = {
    "Convolution": _conv,
    "Deconvolution": _conv,
    "Im2col": _conv,
    "InnerProduct": lambda l: _positive("num_output", l.inner_product_param.num_output),
    "Embed": lambda l: (
        *_positive("num_output", l.embed_param.num_output),
        *_positive("input_dim", l.embed_param.input_dim),
    ),
    "Pooling": _pooling,
    "LRN": lambda l: iter(
        [f"local_size must be a positive odd number (got {l.lrn_param.local_size})"]
        if l.lrn_param.local_size % 2 == 0
        else []
    ),
    "Dropout": lambda l: iter(
        [f"dropout_ratio must be in [0, 1) (got {l.dropout_param.dropout_ratio:g})"]
        if not 0 <= l.dropout_param.dropout_ratio < 1
        else []
    ),
    "Data": lambda l: _positive("batch_size", l.data_param.batch_size),
    "ImageData": lambda l: _positive("batch_size", l.image_data_param.batch_size),
    "HDF5Data": lambda l: _positive("batch_size", l.hdf5_data_param.batch_size),
    "MemoryData": lambda l: _positive("batch_size", l.memory_data_param.batch_size),
    "Accuracy": lambda l: _positive("top_k", l.accuracy_param.top_k),
    "ArgMax": lambda l: _positive("top_k", l.argmax_param.top_k),
    "Tile": lambda l: _positive("tiles", l.tile_param.tiles),
    "Reshape": _reshape,
    "Clip": _clip,
}


def _non_finite(message: Message, prefix: str = "") -> Iterator[str]:
    for field, value in message.ListFields():
        path = f"{prefix}{field.name}"
        if field.message_type is not None:
            for i, item in enumerate(value if field.is_repeated else [value]):
                yield from _non_finite(item, f"{path}.{i}." if field.is_repeated else f"{path}.")
        elif field.cpp_type in (field.CPPTYPE_FLOAT, field.CPPTYPE_DOUBLE) and any(
            not math.isfinite(v) for v in (value if field.is_repeated else [value])
        ):
            yield f"{path} must be a finite number"


def _readable(message: Message) -> Iterator[str]:
    """The message must survive its own prototxt (what saving and the text view do)."""
    missing = message.FindInitializationErrors()
    if missing:
        yield f"required field {', '.join(missing)} must be set"
        return
    try:
        back = text_format.Parse(text_format.MessageToString(message), type(message)())
    except text_format.ParseError as e:
        yield f"the layer no longer reads back as prototxt: {e}"
        return
    if back != message:
        yield "the layer does not read back the same from prototxt"


def layer_problems(layer: Layer) -> list[str]:
    """Everything these checks find wrong with ``layer``, most basic first."""
    problems = []
    if not layer.name.strip():
        problems.append("a layer needs a name")
    if not layer.type.strip():
        problems.append("a layer needs a type")
    for what in ("bottom", "top"):
        if any(not blob.strip() for blob in getattr(layer, what)):
            problems.append(f"a {what} blob needs a name")
    if layer.propagate_down and len(layer.propagate_down) != len(layer.bottom):
        problems.append(
            f"propagate_down must be given 0 or {len(layer.bottom)} times (once per bottom), "
            f"not {len(layer.propagate_down)}"
        )
    if layer.loss_weight and len(layer.loss_weight) != len(layer.top):
        problems.append(f"loss_weight must be given 0 or {len(layer.top)} times (once per top)")
    blobs = _PARAM_BLOBS.get(layer.type)
    if blobs is not None and len(layer.param) > blobs(layer):
        problems.append(f"{layer.type} has {blobs(layer)} learnable blob(s): too many param {{ }} blocks")
    problems += _non_finite(layer)
    rule = _TYPE_RULES.get(layer.type)
    if rule is not None:
        problems += rule(layer)
    problems += _readable(layer)
    return problems


def edit_problem(old: Message, new: Message, problems: Callable[[Message], list[str]]) -> str | None:
    """The first problem ``new`` has that ``old`` did not, or None: an edit may not add one."""
    before = set(problems(old))
    return next((p for p in problems(new) if p not in before), None)


def layer_edit_problem(old: Layer, new: Layer) -> str | None:
    return edit_problem(old, new, layer_problems)  # type: ignore[arg-type]


NO_MOMENTUM = ("AdaGrad", "RMSProp")  # their Caffe constructors CHECK momentum == 0


def solver_problems(solver: caffe_pb2.SolverParameter) -> list[str]:
    problems = list(_non_finite(solver))
    if solver.lr_policy and solver.lr_policy not in POLICIES:
        problems.append(f"unknown lr_policy '{solver.lr_policy}' (known: {', '.join(POLICIES)})")
    if solver.lr_policy == "step" and solver.stepsize <= 0:
        problems.append("lr_policy 'step' needs stepsize > 0")
    if solver.type and solver.type not in solver_types():
        problems.append(f"unknown solver type '{solver.type}' (known: {', '.join(solver_types())})")
    for name in ("max_iter", "test_interval", "display", "snapshot", "average_loss", "iter_size"):
        if getattr(solver, name) < 0:
            problems.append(f"{name} must not be negative")
    if solver.iter_size < 1:
        problems.append("iter_size must be at least 1")
    if solver.base_lr < 0:
        problems.append("base_lr must not be negative")
    if any(i < 0 for i in solver.test_iter):
        problems.append("test_iter must not be negative")
    if solver.type in NO_MOMENTUM and solver.momentum != 0:
        problems.append(f"Momentum cannot be used with {solver.type}.")  # Caffe's CHECK, its words
    problems += _readable(solver)
    return problems


def solver_edit_problem(old: caffe_pb2.SolverParameter, new: caffe_pb2.SolverParameter) -> str | None:
    return edit_problem(old, new, solver_problems)  # type: ignore[arg-type]


def solver_caffe10_notice(solver: caffe_pb2.SolverParameter) -> str | None:
    """One line for the solver panel's notice area, or None when Caffe 1.0 reads the solver.

    A warning, never a refusal: it stays out of ``solver_problems`` (which refuses edits), since a
    master-only field such as ``weights`` is a fine thing to set here.
    """
    notes = caffe10.newer_than_1_0(solver)
    if not notes:
        return None
    return f"{caffe10.TOOLTIP}: " + "; ".join(n.removeprefix("solver: ") for n in notes)
