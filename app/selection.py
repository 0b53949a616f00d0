"""Which layers are selected: one Qt-free object shared by the graph, inspector and panels.

Layers are addressed by index (names repeat across phases, e.g. LeNet's two data layers); the
selection follows the document's edits so an index keeps pointing at the same layer.
"""

from __future__ import annotations

from app.document import Change, Document, Kind
from app.signal import Signal


class Selection:
    def __init__(self, document: Document) -> None:
        self.document = document
        self._layers: tuple[int, ...] = ()
        self.changed = Signal()  # emits the new tuple of indices
        document.changed.connect(self._follow)

    @property
    def layers(self) -> tuple[int, ...]:
        return self._layers

    @property
    def current(self) -> int | None:
        """The one layer panels show: the last selected."""
        return self._layers[-1] if self._layers else None

    def select(self, indices: int | tuple[int, ...] | list[int] | None) -> None:
        if indices is None:
            new: tuple[int, ...] = ()
        elif isinstance(indices, int):
            new = (indices,)
        else:
            new = tuple(dict.fromkeys(indices))
        count = len(self.document.net.layer)
        new = tuple(i for i in new if 0 <= i < count)
        if new != self._layers:
            self._layers = new
            self.changed.emit(new)

    def clear(self) -> None:
        self.select(())

    def _follow(self, change: Change) -> None:
        if change.kind in (Kind.NET_LOADED,):
            self.clear()
        elif change.kind == Kind.NET_REPLACED:
            self.select(self._layers)  # drop indices that no longer exist
        elif change.kind == Kind.LAYER_ADDED and change.index is not None:
            self.select(tuple(i + (i >= change.index) for i in self._layers))
        elif change.kind == Kind.LAYER_REMOVED and change.index is not None:
            self.select(tuple(i - (i > change.index) for i in self._layers if i != change.index))
        elif change.kind == Kind.LAYER_MOVED and change.index is not None and change.old_index is not None:
            order = list(range(len(self.document.net.layer)))  # old indices, rearranged as the move did
            order.insert(change.index, order.pop(change.old_index))
            where = {old: new for new, old in enumerate(order)}
            self.select(tuple(where[i] for i in self._layers if i in where))
