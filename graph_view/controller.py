"""Gestures become the document's commands: drop, connect, delete, rename (a layer or a blob), copy,
cut, paste, duplicate.

The controller is handed the document, the ``push(command)`` callable every view edits through,
and the commands to push (``graph_view.document_api``'s protocols, which the app's satisfy):
graph_view never imports app/. A command the document refuses raises; its reason goes out on
``message`` and nothing changes.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QMimeData, QObject, QPointF, Signal
from PySide6.QtWidgets import QApplication

from graph_view import edit_plans
from graph_view.document_api import Command, Commands, Document, Push
from graph_view.items import BandItem, NodeItem
from graph_view.scene import GraphScene
from graph_view.wires import WireItem

MIME_LAYERS = "application/x-barista-layers"
PASTE_OFFSET = 40.0


class GraphController(QObject):
    message = Signal(str)
    select_request = Signal(list)  # document indices to select after an edit

    def __init__(self, document: Document, push: Push, commands: Commands, scene: GraphScene) -> None:
        super().__init__(scene)
        self.document, self.push, self.commands, self.scene = document, push, commands, scene

    @property
    def layers(self):
        return self.document.net.layer

    def _push(self, command: Command) -> bool:
        try:
            self.push(command)
        except ValueError as exc:  # CommandError: the document refused, nothing changed
            self.message.emit(str(exc))
            return False
        return True

    def _canonical(self, pos: QPointF) -> tuple[float, float]:
        return (pos.x(), pos.y() if self.scene.downward else -pos.y())

    # ---- the layout (the document's, when it has one) ----------------------------------------
    def _owns_layout(self) -> bool:
        return getattr(self.document, "layout", None) is not None and hasattr(self.commands, "set_layout")

    def set_layout(self, state: Any, label: str) -> bool:
        return self._owns_layout() and self._push(self.commands.set_layout(state, label))

    def _with_positions(
        self, steps: list, moved: dict[str, tuple[float, float] | None], text: str, one_step: bool = True
    ) -> Any:
        """``steps`` as one undo step, with the document's layout following them: ``moved`` maps a
        box to its new place (None: forget it). Without a document layout the canvas keeps them.
        ``one_step``: a single step goes as itself, not wrapped in a compound."""
        if not self._owns_layout():
            for key, place in moved.items():
                if place is None:
                    self.scene.manual.pop(key, None)
                else:
                    self.scene.manual[key] = place
            return steps[0] if len(steps) == 1 and one_step else self.commands.compound(steps, text)
        state = self.document.layout.copy()
        for key, place in moved.items():
            if place is None:
                state.positions.pop(key, None)
            else:
                state.positions[key] = place
        if state == self.document.layout:
            return steps[0] if len(steps) == 1 and one_step else self.commands.compound(steps, text)
        return self.commands.compound([*steps, self.commands.set_layout(state, text)], text)

    # ---- adding and wiring ------------------------------------------------------------------
    def add_layer(self, layer_type: str, pos: QPointF) -> bool:
        layer = self.document.new_layer(layer_type)
        add = self.commands.add_layer(layer)
        if not self._push(self._with_positions([add], {layer.name: self._canonical(pos)}, add.text)):
            self.scene.manual.pop(layer.name, None)
            return False
        self.select_request.emit([len(self.layers) - 1])
        return True

    def connect(self, src_key: str, src_slot: int, dst_key: str, dst_slot: int) -> bool:  # type: ignore[override]
        graph = self.scene.graph
        src, dst = graph.nodes.get(src_key), graph.nodes.get(dst_key)
        if src is None or dst is None or src.index is None or dst.index is None:
            return False
        blob = src.tops[src_slot]
        slot = None if dst_slot < 0 else dst_slot
        if slot is not None and slot < len(dst.bottoms) and dst.bottoms[slot] == blob:
            return False  # already wired so
        last = max([src.index] + [b.index for b in src.bands if b.blob == blob and b.index is not None])
        moves = edit_plans.moves_after(self.layers, dst.index, last)
        if moves is None:
            self.message.emit(f"'{blob}' cannot feed '{dst.layer.name}': it depends on it (a cycle)")
            return False
        at = edit_plans.position_after(moves, dst.index, len(self.layers))
        connect = self.commands.connect(at, blob, slot)
        steps = [self.commands.move_layer(a, b) for a, b in moves] + [connect]
        return self._push(steps[0] if len(steps) == 1 else self.commands.compound(steps, connect.text))

    # ---- removing -------------------------------------------------------------------------
    def selected_layer_indices(self) -> list[int]:
        """The selected boxes with their in-place bands, and selected bands alone."""
        found: set[int] = set()
        for item in self.scene.selectedItems():
            if isinstance(item, NodeItem) and item.index is not None:
                found.add(item.index)
                found |= {b.index for b in item.node.bands if b.index is not None}
            elif isinstance(item, BandItem) and item.index is not None:
                found.add(item.index)
        return sorted(found)

    def delete_selection(self) -> bool:
        if not self.scene.editable:
            return False
        removed = self.selected_layer_indices()
        cuts = sorted(
            {(w.dst_index, w.edge.dst_slot) for w in self.scene.selectedItems()
             if isinstance(w, WireItem) and w.dst_index is not None and w.dst_index not in removed},
            key=lambda c: (c[0], -c[1]),
        )  # fmt: skip
        steps = [self.commands.disconnect(i, slot) for i, slot in cuts]
        steps += [self.commands.remove_layer(i) for i in sorted(removed, reverse=True)]
        if not steps:
            return False
        what = f"{len(removed)} layer{'s' * (len(removed) != 1)}" if removed else "wire"
        return self._push(steps[0] if len(steps) == 1 else self.commands.compound(steps, f"Delete {what}"))

    # ---- renaming -------------------------------------------------------------------------
    def rename(self, key: str, name: str) -> bool:
        index = self.scene.graph.index_of(key)
        if index is None:
            return False
        old = self.layers[index].name
        if name == old:
            return False
        steps = [self.commands.rename_layer(index, name)]
        blobs = {b for layer in self.layers for b in (*layer.bottom, *layer.top)}
        own_top = old in self.layers[index].top and old not in self.layers[index].bottom
        if own_top and name not in blobs:  # conv1 makes blob conv1: keep the pair in step
            steps.append(self.commands.rename_blob(old, name))
        place = self.scene.manual.get(key)
        moved = {key: None, name: place} if place is not None else {}
        return self._push(self._with_positions(steps, moved, steps[0].text))

    def rename_blob(self, old: str, name: str) -> bool:
        """Rename blob ``old`` wherever a layer reads or writes it (its in-place chain included).

        An empty name or one another blob already has is refused with a message; nothing changes.
        """
        name = name.strip()
        if name == old:
            return False
        if not name:
            self.message.emit(f"A blob needs a name: '{old}' keeps its name")
            return False
        if name in {b for layer in self.layers for b in (*layer.bottom, *layer.top)}:
            self.message.emit(
                f"Cannot rename blob '{old}' to '{name}': a blob named '{name}' already exists "
                "(they would become one blob)"
            )
            return False
        return self._push(self.commands.rename_blob(old, name))

    # ---- clipboard --------------------------------------------------------------------------
    def _selected_layers(self) -> list:
        return [self.layers[i] for i in self.selected_layer_indices()]

    def copy(self) -> bool:
        layers = self._selected_layers()
        if not layers:
            return False
        data = QMimeData()
        text = edit_plans.layers_to_text(layers)
        data.setData(MIME_LAYERS, text.encode("utf-8"))
        data.setText(text)
        QApplication.clipboard().setMimeData(data)
        return True

    def cut(self) -> bool:
        return self.copy() and self.delete_selection()

    def paste(self) -> bool:
        data = QApplication.clipboard().mimeData()
        if data is None:
            return False
        text = (
            bytes(data.data(MIME_LAYERS).data()).decode("utf-8")
            if data.hasFormat(MIME_LAYERS)
            else data.text()
        )
        return self._paste(edit_plans.layers_from_text(text), "Paste")

    def duplicate(self) -> bool:
        return self._paste(self._selected_layers(), "Duplicate")

    def _paste(self, layers: list, verb: str) -> bool:
        if not layers or not self.scene.editable:
            return False
        names = [layer.name for layer in self.layers]
        blobs = {b for layer in self.layers for b in (*layer.bottom, *layer.top)}
        copies = edit_plans.renamed_copies(layers, names, blobs)
        steps = [self.commands.add_layer(layer) for layer in copies]
        count = len(copies)
        moved: dict[str, tuple[float, float] | None] = {}
        for old, new in zip(layers, copies):
            if old.name in self.scene.manual:
                x, y = self.scene.manual[old.name]
                moved[new.name] = (x + PASTE_OFFSET, y + PASTE_OFFSET)
        text = f"{verb} {count} layer{'s' * (count != 1)}"
        if not self._push(self._with_positions(steps, moved, text, one_step=False)):
            return False
        total = len(self.layers)
        self.select_request.emit(list(range(total - count, total)))
        return True
