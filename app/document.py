"""The document: one NetParameter and one SolverParameter, their files, and what changed.

Qt-free. Every view draws from it and redraws on ``changed``; edits arrive only as commands
(``app.commands``) so each can be undone. File operations (open, save) are not commands: opening
emits ``NET_LOADED`` / ``SOLVER_LOADED``, after which any undo history no longer applies.

The user's own prototxt text (comments and all) is kept alongside the net and always describes
it exactly: an edit from the graph or the inspector rewrites only the lines it changes
(``netio.edited_text``: the field's line, or the layer's block), and undo puts the text back byte
for byte. A net with no text of its own (a new one) is rendered from the net.

The layout (box positions, flow direction, unfolded boxes: ``graph_view.sidecar.ViewState``) is
document state too: edited by the ``SetLayout`` command, it marks the document modified and is
written beside the net (``NET.prototxt.layout.json``) only when the net is saved.

An untitled document may carry a ``title`` ("LeNet (example)") and an ``origin``: the file it was
copied from, which relative data paths are read against; nothing is ever written there.

``net``, ``solver`` and ``layout`` are the live state: read them, never write them.
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
from graph_view import sidecar
from graph_view.document_api import NET_KINDS as NET_KINDS  # the change kinds are graph_view's too
from graph_view.document_api import SOLVER_KINDS as SOLVER_KINDS
from graph_view.document_api import Kind
from graph_view.sidecar import ViewState
from proto import caffe_pb2
from proto.atomic import write_text_atomic

NET, SOLVER, LAYOUT = "net", "solver", "layout"
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
        self._layout = ViewState()
        self._paths: dict[str, str | None] = {NET: None, SOLVER: None}
        self._texts: dict[str, str | None] = {NET: None, SOLVER: None, LAYOUT: None}  # the user's text
        self._rendered: dict[str, str | None] = {NET: None, SOLVER: None, LAYOUT: None}
        self._state = {NET: next(_states), SOLVER: next(_states), LAYOUT: next(_states)}
        self._saved = dict(self._state)
        self.title: str | None = None  # what an untitled document is called ("LeNet (example)")
        self.origin: str | None = None  # the file an untitled copy was made from (read, never written)
        self.weights_path: str | None = None  # a trained model opened with the net: Train starts from it
        self.weights: dict[str, list] = {}  # its blobs, layer name -> arrays (numpy), for the views

    # ---- reading --------------------------------------------------------------------------
    @property
    def net(self) -> caffe_pb2.NetParameter:
        return self._net

    @property
    def solver(self) -> caffe_pb2.SolverParameter:
        return self._solver

    @property
    def layout(self) -> ViewState:
        return self._layout

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
    def layout_dirty(self) -> bool:
        return self._state[LAYOUT] != self._saved[LAYOUT]

    @property
    def dirty(self) -> bool:
        return self.net_dirty or self.solver_dirty or self.layout_dirty

    @property
    def folder(self) -> str | None:
        """The folder the document's relative paths mean: its solver's, its net's, or its origin's."""
        path = self.solver_path or self.net_path or self.origin
        return os.path.dirname(os.path.abspath(path)) if path else None

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
    def load_net(
        self,
        net: caffe_pb2.NetParameter,
        path: str | None = None,
        text: str | None = None,
        *,
        layout: ViewState | None = None,
        title: str | None = None,
        origin: str | None = None,
        modified: bool = False,
    ) -> None:
        """Replace the net outright (a new or opened file), with no history.

        The layout is ``layout``, else the sidecar beside ``path``, else the automatic one.
        ``modified``: the net differs from its file already (it was upgraded from a legacy format).
        """
        self._net = copy_message(net)
        self._texts[NET], self._rendered[NET] = text, None
        loaded = layout if layout is not None else sidecar.load(path)
        self._layout = loaded.copy() if loaded is not None else ViewState()
        self._state[LAYOUT] = self._saved[LAYOUT] = next(_states)
        self.title, self.origin = (None, None) if path else (title, origin)
        had_weights = self.weights_path is not None
        self.weights_path, self.weights = None, {}
        self._reset(NET, path, Kind.NET_LOADED, modified)
        if had_weights:
            self.changed.emit(Change(Kind.WEIGHTS_CHANGED))

    def set_weights(self, path: str | None, weights: dict[str, list] | None = None) -> None:
        """Trained weights for this net (``path`` a .caffemodel or .caffemodel.h5), or none."""
        self.weights_path, self.weights = path, dict(weights or {})
        self.changed.emit(Change(Kind.WEIGHTS_CHANGED))

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
        """Write the net atomically to ``path`` (default: where it came from), then its layout beside
        it (when there is one to keep, or an older one to replace); returns the path."""
        target = self._save(NET, path)
        names = {layer.name for layer in self._net.layer}
        layout = self._layout.only(names)
        if not layout.is_default() or os.path.exists(sidecar.path_for(target)):
            sidecar.save(target, layout)
        was_dirty = self.dirty
        self._saved[LAYOUT] = self._state[LAYOUT]
        self.title = self.origin = None
        self._emit_dirty(was_dirty)
        return target

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

    def remember_data_shapes(self, shapes: dict[str, list[tuple[int, ...]]]) -> None:
        """What data layers gave the last time their sources were read (by ``record_key``): kept in
        the layout, for when the data is gone. A fact about the data, not an edit: no undo step,
        the document is not modified by it, and it is written with the next Save."""
        if any(self._layout.data_shapes.get(k) != list(v) for k, v in shapes.items()):
            layout = self._layout.copy()
            layout.data_shapes.update({k: list(v) for k, v in shapes.items()})
            self._layout = layout

    def replace_layout(self, layout: ViewState) -> ViewState:
        """Put ``layout`` in place of the boxes' positions, direction and unfolding; returns the old."""
        old, self._layout = self._layout, layout
        return old

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

    def _reset(self, part: str, path: str | None, kind: Kind, modified: bool = False) -> None:
        was_dirty = self.dirty
        self._state[part] = self._saved[part] = next(_states)
        if modified:
            self._saved[part] = next(_states)
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
