"""The document: one NetParameter and one SolverParameter, their files, and what changed.

Qt-free. Every view draws from it and redraws on ``changed``; edits arrive only as commands
(``app.commands``) so each can be undone. File operations (open, save) are not commands: opening
emits ``NET_LOADED`` / ``SOLVER_LOADED``, after which any undo history no longer applies.

The user's own prototxt text (comments and all) is kept alongside the net for as long as it
describes the net exactly, so opening, editing as text and saving does not lose comments; a
structural edit (from the graph or the inspector) drops it and the text is rendered from the net.

``net`` and ``solver`` are the live messages: read them, never write them.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any, overload

from app import netio
from app.fields import copy_message
from app.layer_defaults import default_layer, name_stem, unique_name
from app.signal import Signal
from graph_view.document_api import NET_KINDS as NET_KINDS  # the change kinds are graph_view's too
from graph_view.document_api import SOLVER_KINDS as SOLVER_KINDS
from graph_view.document_api import Kind
from proto import caffe_pb2
from proto.atomic import write_text_atomic

NET, SOLVER = "net", "solver"
_states = itertools.count(1)  # global, so a state id is never reused by any document


@dataclass(frozen=True)
class Change:
    kind: Kind
    index: int | None = None
    old_index: int | None = None
    old: caffe_pb2.LayerParameter | None = None


class Document:
    def __init__(
        self,
        net: caffe_pb2.NetParameter | None = None,
        solver: caffe_pb2.SolverParameter | None = None,
    ) -> None:
        self.changed = Signal()  # emits one Change per event
        self._net = copy_message(net) if net is not None else caffe_pb2.NetParameter()
        self._solver = copy_message(solver) if solver is not None else caffe_pb2.SolverParameter()
        self._paths: dict[str, str | None] = {NET: None, SOLVER: None}
        self._texts: dict[str, str | None] = {NET: None, SOLVER: None}  # the user's text, if exact
        self._rendered: dict[str, str | None] = {NET: None, SOLVER: None}
        self._state = {NET: next(_states), SOLVER: next(_states)}
        self._saved = dict(self._state)

    # ---- reading --------------------------------------------------------------------------
    @property
    def net(self) -> caffe_pb2.NetParameter:
        return self._net

    @property
    def solver(self) -> caffe_pb2.SolverParameter:
        return self._solver

    @property
    def net_path(self) -> str | None:
        return self._paths[NET]

    @property
    def solver_path(self) -> str | None:
        return self._paths[SOLVER]

    @property
    def net_dirty(self) -> bool:
        return self._state[NET] != self._saved[NET]

    @property
    def solver_dirty(self) -> bool:
        return self._state[SOLVER] != self._saved[SOLVER]

    @property
    def dirty(self) -> bool:
        return self.net_dirty or self.solver_dirty

    def net_text(self) -> str:
        """The net as prototxt: the user's own text while it still describes the net exactly."""
        return self._text(NET)

    def solver_text(self) -> str:
        return self._text(SOLVER)

    def layer(self, index: int) -> caffe_pb2.LayerParameter:
        return self._net.layer[index]

    def layer_names(self) -> list[str]:
        return [layer.name for layer in self._net.layer]

    def index_of(self, name: str) -> int | None:
        """The first layer called ``name`` (a net may reuse a name across phases, as LeNet does)."""
        return next((i for i, layer in enumerate(self._net.layer) if layer.name == name), None)

    def unique_name(self, base: str) -> str:
        return unique_name(set(self.layer_names()), base)

    def new_layer(self, layer_type: str, name: str | None = None) -> caffe_pb2.LayerParameter:
        """A default ``layer_type`` layer with a name no layer here has (conv1, conv2, ...)."""
        return default_layer(layer_type, self.unique_name(name or f"{name_stem(layer_type)}1"))

    # ---- files ----------------------------------------------------------------------------
    def load_net(self, net: caffe_pb2.NetParameter, path: str | None = None, text: str | None = None) -> None:
        """Replace the net outright (a new or opened file): clean, with no history."""
        self._net = copy_message(net)
        self._texts[NET], self._rendered[NET] = text, None
        self._reset(NET, path, Kind.NET_LOADED)

    def load_solver(
        self, solver: caffe_pb2.SolverParameter, path: str | None = None, text: str | None = None
    ) -> None:
        self._solver = copy_message(solver)
        self._texts[SOLVER], self._rendered[SOLVER] = text, None
        self._reset(SOLVER, path, Kind.SOLVER_LOADED)

    def open_net(self, path: str | os.PathLike[str]) -> None:
        """Read a net prototxt; OSError or proto.errors.FormatError leave the document as it was."""
        path = os.fspath(path)
        net, text = netio.load_net_text(netio.read_file(path), path)
        self.load_net(net, path, text)

    def open_solver(self, path: str | os.PathLike[str]) -> None:
        path = os.fspath(path)
        solver, text = netio.load_solver_text(netio.read_file(path), path)
        self.load_solver(solver, path, text)

    def save_net(self, path: str | os.PathLike[str] | None = None) -> str:
        """Write the net atomically to ``path`` (default: where it came from); returns the path."""
        return self._save(NET, path)

    def save_solver(self, path: str | os.PathLike[str] | None = None) -> str:
        return self._save(SOLVER, path)

    # ---- for commands (app.commands) only ------------------------------------------------
    def mark(self, part: str) -> tuple[int, str | None]:
        """Where ``part`` (NET or SOLVER) stands: its state id and the user's text, to come back to."""
        return self._state[part], self._texts[part]

    @overload
    def replace(self, message: caffe_pb2.NetParameter) -> caffe_pb2.NetParameter: ...
    @overload
    def replace(self, message: caffe_pb2.SolverParameter) -> caffe_pb2.SolverParameter: ...
    def replace(self, message: caffe_pb2.NetParameter | caffe_pb2.SolverParameter) -> Any:
        """Put ``message`` in place of the whole net or solver; returns the one it replaces."""
        if isinstance(message, caffe_pb2.NetParameter):
            old, self._net = self._net, message
            return old
        old_solver, self._solver = self._solver, message
        return old_solver

    def commit(self, part: str, state: int, text: str | None, changes: list[Change]) -> None:
        """After a command changed ``part``: record its state and text, then tell the views."""
        was_dirty = self.dirty
        self._state[part], self._texts[part], self._rendered[part] = state, text, None
        for change in changes:
            self.changed.emit(change)
        self._emit_dirty(was_dirty)

    # ---- internals ------------------------------------------------------------------------
    def _text(self, part: str) -> str:
        text = self._texts[part]
        if text is not None:
            return text
        if self._rendered[part] is None:
            net, solver = self._net, self._solver
            self._rendered[part] = netio.net_to_text(net) if part == NET else netio.solver_to_text(solver)
        return self._rendered[part]  # type: ignore[return-value]

    def _reset(self, part: str, path: str | None, kind: Kind) -> None:
        was_dirty = self.dirty
        self._state[part] = self._saved[part] = next(_states)
        self.changed.emit(Change(kind))
        self._set_path(part, path)
        self._emit_dirty(was_dirty)

    def _save(self, part: str, path: str | os.PathLike[str] | None) -> str:
        target = os.fspath(path) if path is not None else self._paths[part]
        if target is None:
            raise ValueError(f"the {part} has no file yet: give a path")
        write_text_atomic(target, self._text(part))
        was_dirty = self.dirty
        self._saved[part] = self._state[part]
        self._set_path(part, target)
        self._emit_dirty(was_dirty)
        return target

    def _set_path(self, part: str, path: str | None) -> None:
        if path != self._paths[part]:
            self._paths[part] = path
            self.changed.emit(Change(Kind.PATH_CHANGED))

    def _emit_dirty(self, was_dirty: bool) -> None:
        if self.dirty != was_dirty:
            self.changed.emit(Change(Kind.DIRTY_CHANGED))


def next_state() -> int:
    """A fresh state id, for a command's first ``do``."""
    return next(_states)
