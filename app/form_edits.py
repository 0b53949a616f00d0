"""From a form's ``edited(path, value)`` to a checked, undoable command (or a refusal).

Qt-free. The inspector and the solver panel call these; each returns the command to push, or
raises ``CommandError`` with the reason fit to show the user, having changed nothing.
"""

from __future__ import annotations

import re
from typing import Any

from app.checks import layer_edit_problem, solver_edit_problem
from app.commands import (
    Command,
    CommandError,
    RenameLayer,
    ReplaceLayer,
    ReplaceSolver,
    SetLayerField,
    SetNetField,
    SetSolverField,
)
from app.document import Document
from app.fields import FieldPathError, copy_message, get_field, set_field
from app.layer_defaults import default_layer
from app.layer_params import param_fields, stray_params
from engine.solvers import solver_class, solver_types
from proto import caffe_pb2


def _set(message, path: str, value: Any) -> None:
    try:
        set_field(message, path, value)
    except FieldPathError as e:
        raise CommandError(str(e)) from None


def _fill_required(message) -> bool:
    """Give unset required fields their defaults (clip_param.min once max is typed); True if any."""
    missing = message.FindInitializationErrors()
    for path in missing:
        path = re.sub(r"\[(\d+)\]", r".\1", path)
        holder_path, _, name = path.rpartition(".")
        holder = get_field(message, holder_path) if holder_path else message
        set_field(message, path, holder.DESCRIPTOR.fields_by_name[name].default_value)
    return bool(missing)


def layer_edit(doc: Document, index: int, path: str, value: Any) -> Command:
    """The command that sets ``path`` of layer ``index`` to ``value`` (None: back to default)."""
    if not 0 <= index < len(doc.net.layer):
        raise CommandError(f"no layer at index {index}")
    old = doc.layer(index)
    if path == "type":
        return change_type(doc, index, str(value or ""))
    new = copy_message(old)
    _set(new, path, value)
    filled = _fill_required(new)
    problem = layer_edit_problem(old, new)
    if problem:
        raise CommandError(problem)
    if path == "name":
        return RenameLayer(index, str(value))
    if filled:
        return ReplaceLayer(index, new, f"Set {path}")
    return SetLayerField(index, path, value)


def change_type(doc: Document, index: int, layer_type: str) -> Command:
    """Retype a layer: the new type's parameters start from their defaults, stale ones go."""
    layer_type = layer_type.strip()
    if not layer_type:
        raise CommandError("a layer needs a type")
    old = doc.layer(index)
    new = copy_message(old)
    new.type = layer_type
    fresh = default_layer(layer_type, old.name)
    for name in param_fields(layer_type):
        if not new.HasField(name) and fresh.HasField(name):
            getattr(new, name).CopyFrom(getattr(fresh, name))
    for name in stray_params(new):
        new.ClearField(name)
    problem = layer_edit_problem(old, new)
    if problem:
        raise CommandError(problem)
    return ReplaceLayer(index, new, f"Change '{old.name}' to {layer_type}")


def net_edit(doc: Document, path: str, value: Any) -> Command:
    new = copy_message(doc.net)
    _set(new, path, value)
    missing = new.FindInitializationErrors()  # type: ignore[attr-defined]  # every message has it
    if missing:
        raise CommandError(f"required field {', '.join(missing)} must be set")
    return SetNetField(path, value)


def _solver_fields(kind: str) -> tuple[str, ...]:
    return solver_class(kind).fields if kind in solver_types() else ("momentum",)


def _policy_defaults(solver: caffe_pb2.SolverParameter) -> bool:
    """Give a newly chosen lr_policy the fields it reads, where unset (Caffe's usual values)."""
    policy, longest = solver.lr_policy, max(solver.max_iter, 1)
    wanted: dict[str, Any] = {  # type: ignore[assignment]
        "step": {"gamma": 0.1, "stepsize": max(longest // 3, 1)},
        "exp": {"gamma": 0.9999},
        "inv": {"gamma": 0.0001, "power": 0.75},
        "multistep": {"gamma": 0.1, "stepvalue": [longest // 2, longest * 3 // 4]},
        "poly": {"power": 1.0},
        "sigmoid": {"gamma": -0.001, "stepsize": max(longest // 2, 1)},
    }.get(policy, {})
    filled = False
    for name, default in wanted.items():
        present = len(solver.stepvalue) > 0 if name == "stepvalue" else solver.HasField(name)
        if not present:
            set_field(solver, name, default)
            filled = True
    return filled


def solver_edit(doc: Document, path: str, value: Any) -> Command:
    new = copy_message(doc.solver)
    _set(new, path, value)
    filled = path == "lr_policy" and _policy_defaults(new)
    # AdaGrad and RMSProp read no momentum (and refuse one): switching to them lets go of it.
    dropped = path == "type" and new.momentum != 0 and "momentum" not in _solver_fields(new.type)
    if dropped:
        new.ClearField("momentum")
    problem = solver_edit_problem(doc.solver, new)
    if problem:
        raise CommandError(problem)
    if filled:
        return ReplaceSolver(new, label=f"Set lr_policy to {new.lr_policy}")
    if dropped:
        return ReplaceSolver(new, label=f"Set type to {new.type} (without momentum)")
    return SetSolverField(path, value)


__all__ = ["change_type", "layer_edit", "net_edit", "solver_edit"]
