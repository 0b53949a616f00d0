"""Cheap checks that refuse a bad edit before it reaches the document.

Qt-free. These are the checks the engine makes when it sets a layer up that need no blob
shapes (num_output > 0, an odd LRN size, a dropout ratio below 1, a filler's std above 0, ...),
declared by each registered class (``Layer.static_problems``, ``Filler.static_problems``,
``Solver.param_problems``), plus what keeps the document readable: required fields set, finite
numbers, and a layer that reads back from its own prototxt. An edit is refused only for a problem
it *introduces*, so a net opened with a problem elsewhere in a layer can still be edited and
repaired field by field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from google.protobuf import text_format
from google.protobuf.message import Message

from app.fields import get_field
from engine.fillers import filler_problems
from engine.layers import Layer as EngineLayer
from engine.layers import find_layer_class
from engine.solvers import solver_class, solver_types
from engine.solvers.lr_policy import POLICIES
from proto import caffe10, caffe_pb2

Layer = caffe_pb2.LayerParameter


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
    missing = message.FindInitializationErrors()  # type: ignore[attr-defined]  # every message has it
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


def _declared(cls: type[EngineLayer], layer: Layer) -> Iterator[str]:
    """What the layer's engine class says about it: too many param blocks, its own and its fillers' checks."""
    blobs = cls.learnable_blobs(layer)
    if blobs is not None and len(layer.param) > len(blobs):
        yield f"{layer.type} has {len(blobs)} learnable blob(s): too many param {{ }} blocks"
    yield from cls.static_problems(layer)
    for blob in blobs or ():
        holder, name = blob.path.rsplit(".", 1) if blob.path else ("", "")
        if blob.path and get_field(layer, holder).HasField(name):
            yield from (f"{blob.path}: {p}" for p in filler_problems(get_field(layer, blob.path)))


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
    problems += _non_finite(layer)
    cls = find_layer_class(layer.type)
    if cls is not None:
        problems += _declared(cls, layer)
    problems += _readable(layer)
    return problems


def edit_problem(old: Message, new: Message, problems: Callable[[Message], list[str]]) -> str | None:
    """The first problem ``new`` has that ``old`` did not, or None: an edit may not add one."""
    before = set(problems(old))
    return next((p for p in problems(new) if p not in before), None)


def layer_edit_problem(old: Layer, new: Layer) -> str | None:
    return edit_problem(old, new, layer_problems)  # type: ignore[arg-type]


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
    if solver.type in solver_types():
        problems += solver_class(solver.type).param_problems(solver)  # Caffe's CHECKs, its words
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
