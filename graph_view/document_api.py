"""What the graph editor needs of the document it is handed, typed: graph_view never imports app/.

Qt-free. The app's ``Document`` and ``Selection`` satisfy these protocols, and ``app.commands``
provides an object satisfying ``Commands``; the change kinds the document emits are defined here,
below both, so the editor compares members of one enum rather than strings of its own.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from graph_view.sidecar import ViewState
from proto import caffe_pb2


class Kind(enum.StrEnum):
    NET_LOADED = "net_loaded"  # a new net from a file or from nothing; undo history is void
    NET_REPLACED = "net_replaced"  # a command swapped the whole net (text edit, net-level field)
    LAYER_ADDED = "layer_added"  # index: where it now is
    LAYER_REMOVED = "layer_removed"  # index: where it was; old: the layer
    LAYER_CHANGED = "layer_changed"  # index; old: the layer as it was
    LAYER_MOVED = "layer_moved"  # old_index -> index
    SOLVER_LOADED = "solver_loaded"
    SOLVER_CHANGED = "solver_changed"
    LAYOUT_CHANGED = "layout_changed"  # box positions, direction or unfolded boxes (Document.layout)
    WEIGHTS_CHANGED = "weights_changed"  # trained weights opened (or dropped with the net)
    PATH_CHANGED = "path_changed"  # net_path or solver_path
    DIRTY_CHANGED = "dirty_changed"


NET_KINDS = frozenset(
    {
        Kind.NET_LOADED,
        Kind.NET_REPLACED,
        Kind.LAYER_ADDED,
        Kind.LAYER_REMOVED,
        Kind.LAYER_CHANGED,
        Kind.LAYER_MOVED,
    }
)
SOLVER_KINDS = frozenset({Kind.SOLVER_LOADED, Kind.SOLVER_CHANGED})


class Signal(Protocol):
    def connect(self, callback: Callable[..., Any]) -> None: ...


class Change(Protocol):
    @property
    def kind(self) -> Kind: ...


class Document(Protocol):
    """The net the editor draws, where it lives, and a way to make a fresh layer for it."""

    @property
    def changed(self) -> Signal: ...  # emits one Change per event
    @property
    def net(self) -> caffe_pb2.NetParameter: ...
    @property
    def net_path(self) -> str | None: ...
    @property
    def net_dirty(self) -> bool: ...
    @property
    def layout(self) -> ViewState: ...  # box positions, direction, unfolded boxes (a viewer's may lack it)
    def new_layer(self, layer_type: str, name: str | None = None) -> caffe_pb2.LayerParameter: ...


class Selection(Protocol):
    """The layers selected across the app, by document index."""

    @property
    def changed(self) -> Signal: ...
    @property
    def layers(self) -> tuple[int, ...]: ...
    def select(self, indices: int | tuple[int, ...] | list[int] | None) -> None: ...


class Command(Protocol):
    text: str  # what Edit > Undo says


class Commands(Protocol):
    """The undoable edits the editor makes; each is pushed, and a refused one raises ValueError."""

    def add_layer(self, layer: caffe_pb2.LayerParameter) -> Command: ...
    def remove_layer(self, index: int) -> Command: ...
    def move_layer(self, index: int, to: int) -> Command: ...
    def connect(self, index: int, blob: str, slot: int | None = None) -> Command: ...
    def disconnect(self, index: int, slot: int) -> Command: ...
    def rename_layer(self, index: int, name: str) -> Command: ...
    def rename_blob(self, old: str, new: str) -> Command: ...
    def compound(self, steps: Sequence[Command], text: str) -> Command: ...
    def set_layout(self, layout: Any, text: str) -> Command: ...  # a sidecar.ViewState for the document


Push = Callable[[Any], None]  # takes the commands ``Commands`` made
