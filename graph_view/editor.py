"""The graph editor widget: a toolbar, the canvas with its minimap, the problems list, the totals.

``GraphEditor(document, push, selection, commands)`` mirrors ``document``, edits it only through
``push(command)`` with commands made by ``commands``, and shares ``selection`` with the rest of the
app; each is typed by its protocol in ``graph_view.document_api``. Without ``push`` and ``commands``
it is a viewer. A document with a ``layout`` (a ``sidecar.ViewState``) owns the box positions, the
direction and the unfolded boxes: gestures change it through ``commands.set_layout`` (one undo step
each) and the document writes it beside the net when it saves; without one they come from the
sidecar and stay on the canvas.
Document changes are coalesced: a Compound of twenty commands redraws once.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QEvent, QFileSystemWatcher, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from engine import pymodules
from engine.data.paths import beside_document
from engine.data_shapes import Hints
from graph_view import canvas_colours, sidecar, summary
from graph_view.controller import GraphController
from graph_view.data_watch import DataWatch
from graph_view.document_api import NET_KINDS, Change, Commands, Document, Kind, Push, Selection
from graph_view.minimap import Minimap
from graph_view.problems import ProblemList
from graph_view.scene import GraphScene
from graph_view.toolbar import GraphToolbar, ModeNote
from graph_view.view import GraphView
from proto import caffe_pb2

SPLITS_NOTE = "As Caffe runs it (Split layers added): read-only"


class GraphEditor(QWidget):
    def __init__(
        self,
        document: Document,
        push: Push | None = None,
        selection: Selection | None = None,
        commands: Commands | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.document, self.selection = document, selection
        self.scene = GraphScene(self)
        self.scene.editing = push is not None and commands is not None
        self.view = GraphView(self.scene, self)
        self.minimap = Minimap(self.view)
        self.problems = ProblemList(self)
        self.toolbar = GraphToolbar(self)
        self.mode_note = ModeNote(self.view)  # "As Caffe runs it: read-only" in the Splits view
        self.status = QLabel(self)
        self.status.setObjectName("graphStatus")
        self.status.setWordWrap(True)  # a long refusal wraps on its own line: it never widens the window
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.status.hide()
        self.totals = self.toolbar.totals  # at the toolbar row's right end: no footer row
        self._style_labels()
        self._layout_widgets()
        self.controller = (
            GraphController(document, push, commands, self.scene)
            if push is not None and commands is not None
            else None
        )
        self._pending = self._fit_pending = self._load_pending = False
        self._reveal_after: list[int] = []  # a selection made elsewhere before the canvas caught up
        self._syncing = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.sync)
        # Python layers' modules beside the net: the user edits them in another program.
        self._module_watch = QFileSystemWatcher(self)
        self._module_watch.fileChanged.connect(lambda _path: self.schedule())
        self._module_watch.directoryChanged.connect(lambda _path: self.schedule())
        # A data source that appears (Train made the bundled MNIST): shapes from the data, at once.
        self.data_watch = DataWatch(self.schedule, self)
        self._message_timer = QTimer(self)
        self._message_timer.setSingleShot(True)
        self._message_timer.timeout.connect(lambda: self.show_message(""))
        self._connect()
        self._make_actions()
        self._load_pending = self._fit_pending = True
        self.schedule()

    def _style_labels(self) -> None:
        """The status line says why an edit was refused: a red readable on the light or dark canvas."""
        red = "#ff8a80" if canvas_colours.is_dark() else "#b42318"
        sheet = f"color: {red}; padding: 3px 10px;"
        if self.status.styleSheet() != sheet:
            self.status.setStyleSheet(sheet)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "status"):
            self._style_labels()

    def _layout_widgets(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.toolbar)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.problems)
        layout.addWidget(self.status)
        self.problems.hide()

    def _connect(self) -> None:
        self.document.changed.connect(self._on_change)
        self.scene.rebuilt.connect(self._after_rebuild)
        self.scene.selectionChanged.connect(self._scene_selection_changed)
        self.scene.positions_changed.connect(lambda: self._layout_edited("Move boxes"))
        self.scene.expanded_toggled.connect(lambda: self._layout_edited("Fold or unfold a box"))
        self.problems.problem_clicked.connect(self.reveal)
        self.toolbar.phase_changed.connect(self.set_phase)
        self.toolbar.splits_toggled.connect(self.set_splits)
        self.toolbar.direction_toggled.connect(self.set_downward)
        self.toolbar.fit_clicked.connect(self.view.fit)
        self.toolbar.relayout_clicked.connect(self.relayout)
        if self.selection is not None:
            self.selection.changed.connect(self._selection_changed)
        if self.controller is not None:
            self.view.layer_dropped.connect(self.controller.add_layer)
            self.view.drop_refused.connect(self.show_message)
            self.view.rename_finished.connect(self.controller.rename)
            self.view.blob_rename_finished.connect(self.controller.rename_blob)
            self.scene.connect_requested.connect(self.controller.connect)
            self.controller.message.connect(self.show_message)
            self.controller.select_request.connect(self._select_later)

    def _make_actions(self) -> None:
        """Canvas keys, bound on the canvas itself; the same QActions make its context menu."""
        keys = QKeySequence.StandardKey

        def action(text, slot, *shortcuts) -> QAction:
            a = QAction(text, self)
            a.triggered.connect(slot)
            self.view.bind(shortcuts, a.trigger)
            first = shortcuts[0]
            hint = QKeySequence(first)
            a.setText(f"{text}\t{hint.toString(QKeySequence.SequenceFormat.NativeText)}")
            return a

        self.fit_action = action("Fit to view", self.view.fit, "F", "Ctrl+0")
        self.zoom_in_action = action("Zoom in", lambda: self.view.zoom_by(1.25), keys.ZoomIn, "Ctrl+=")
        self.zoom_out_action = action("Zoom out", lambda: self.view.zoom_by(0.8), keys.ZoomOut)
        self.select_all_action = action("Select all", self._select_all, keys.SelectAll)
        menu = [self.fit_action, self.select_all_action]
        c = self.controller
        if c is not None:
            self.rename_action = action("Rename", self._rename_selected, "F2")
            self.duplicate_action = action("Duplicate", c.duplicate, "Ctrl+D")
            self.copy_action = action("Copy", c.copy, keys.Copy)
            self.cut_action = action("Cut", c.cut, keys.Cut)
            self.paste_action = action("Paste", c.paste, keys.Paste)
            self.delete_action = action("Delete", c.delete_selection, keys.Delete, "Backspace")
            edits = [self.rename_action, self.duplicate_action, self.copy_action, self.cut_action]
            menu = [*edits, self.paste_action, self.delete_action, _separator(self), *menu]
        self.view.addActions(menu)  # no shortcuts on them: the canvas's own keys above do that
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)

    # ---- following the document ---------------------------------------------------------------
    def _on_change(self, change: Change) -> None:
        kind = change.kind
        if kind == Kind.NET_LOADED:
            self._load_pending = self._fit_pending = True
            self.schedule()
        elif kind in NET_KINDS:
            self.schedule()
        elif kind == Kind.LAYOUT_CHANGED:
            if self._scene_layout() != self.document.layout:  # an undo, or an edit made elsewhere
                self._load_sidecar()  # at once: the next gesture starts from it
                self.schedule()
        elif kind == Kind.PATH_CHANGED and (self._load_pending or pymodules.module_names(self.document.net)):
            self.schedule()  # Python layers' modules are looked for in the new folder

    def schedule(self) -> None:
        self._pending = True
        self._timer.start(0)

    def sync(self) -> None:
        """Bring the canvas up to date with the document now (tests, and the timer, call this)."""
        self._timer.stop()
        if self._load_pending:
            self._load_pending = False
            self._load_sidecar()
        if self._pending:
            self._pending = False
            doc = self.document
            self.scene.module_dirs = pymodules.folders(
                getattr(doc, "net_path", None), getattr(doc, "solver_path", None)
            )
            self.scene.data_hints.net_path = getattr(doc, "net_path", None)  # a deploy net beside it
            self.scene.data_hints.data_paths = beside_document(doc)  # as View Data and a run look
            self.scene.show_net(doc.net)
            self._watch_modules()
        if self._fit_pending and self.view.isVisible() and self.view.viewport().width() > 50:
            self._fit_pending = False
            self.view.fit_readable()

    def _after_rebuild(self) -> None:
        self._syncing = True
        if self.selection is not None:
            self.scene.select_indices(self.selection.layers)
        self._syncing = False
        reveal, self._reveal_after = self._reveal_after, []
        if reveal and self.selection is not None and reveal == list(self.selection.layers):
            self._bring_into_view(reveal)  # a layer added from the palette, say, lands in view
        self.problems.show_problems(self.scene.problems)
        g = self.scene.graph
        self.data_watch.follow(g, self.scene.data_hints.data_paths or beside_document(self.document))
        self.scene.data_hints.recorded.update(g.read_shapes)  # for when the data is gone
        remember = getattr(self.document, "remember_data_shapes", None)  # a viewer's has no layout
        if remember is not None and g.read_shapes:
            remember(g.read_shapes)
        if self.scene.too_big:
            self.totals.setText(f"{len(self.document.net.layer):,} layers · too many to draw")
            return
        unknown = sum(1 for shapes in g.shapes.values() if None in shapes.tops)
        # Counted as the status bar counts (the document's layers), then what this view adds or leaves out.
        shown, total = len(g.keys_of_index), len(self.document.net.layer)
        phase = "TEST" if self.scene.phase == caffe_pb2.TEST else "TRAIN"
        text = f"{shown} layers" if shown == total else f"{shown} of {total} layers in {phase}"
        added = len(g.layers) - shown
        text += f" + {added} Split{'s' * (added != 1)} · " if added > 0 else " · "
        if unknown == len(g.layers) and unknown:
            text += "shapes unknown"
        else:
            text += f"{summary.count(g.total_params)} params · {summary.flops(g.total_flops)}/image"
            text += f" · {unknown} without shapes" if unknown else ""
        self.totals.setText(text)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._fit_pending:
            QTimer.singleShot(0, self.sync)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._fit_pending:
            QTimer.singleShot(0, self.sync)

    def _watch_modules(self) -> None:
        """Watch the folders and files of the net's Python layers: a module written or edited there
        is imported afresh and the canvas redrawn (the shapes come from its reshape)."""
        names = pymodules.module_names(self.document.net)
        where = self.scene.module_dirs if names else []
        files = [pymodules.module_file(name, where) for name in names]
        wanted = {p for p in (*where, *files) if p and os.path.exists(p)}
        watched = set(self._module_watch.files()) | set(self._module_watch.directories())
        if watched - wanted:
            self._module_watch.removePaths(sorted(watched - wanted))
        if wanted - watched:
            self._module_watch.addPaths(sorted(wanted - watched))

    # ---- view state -----------------------------------------------------------------------------
    def set_phase(self, phase: int) -> None:
        whole = self._whole_in_view()
        self.scene.phase = phase
        self.scene.rebuild()
        self._keep_whole(whole)

    def set_splits(self, on: bool) -> None:
        whole = self._whole_in_view()
        self.scene.splits = on
        self.toolbar.set_splits(on)
        self.mode_note.say(SPLITS_NOTE if on else "")
        self.scene.rebuild()
        self._keep_whole(whole)

    def _whole_in_view(self) -> bool:
        rect = self.scene.itemsBoundingRect()
        return self.view.isVisible() and not rect.isEmpty() and self.view.visible_scene_rect().contains(rect)

    def _keep_whole(self, was_whole: bool) -> None:
        """A net seen whole stays whole in another view of it (TEST, Splits: a row taller), so its top
        row does not start off screen; a net the user is reading zoomed in is left where it is."""
        if was_whole and not self._fit_pending and not self._whole_in_view():
            self.view.fit()

    def set_downward(self, downward: bool) -> None:
        if downward == self.scene.downward:
            return
        self.scene.downward = downward
        self.toolbar.set_downward(downward)
        self.scene.rebuild()
        self.view.fit()
        self._layout_edited("Top-down layout" if downward else "Bottom-up layout")

    def relayout(self) -> None:
        self.scene.relayout()
        self.view.fit()
        self._layout_edited("Auto layout")

    def _load_sidecar(self) -> None:
        """The layout to show: the document's, or (a viewer's document has none) the sidecar's."""
        state = getattr(self.document, "layout", None)
        if state is None:
            state = sidecar.load(getattr(self.document, "net_path", None))
        state = state.copy() if state is not None else sidecar.ViewState()
        self.scene.manual, self.scene.expanded = state.positions, state.expanded
        self.scene.downward = state.downward
        self.toolbar.set_downward(self.scene.downward)
        hints = self.scene.data_hints
        self.scene.data_hints = Hints(
            state.input_shapes, state.data_shapes, net_path=hints.net_path, data_paths=hints.data_paths
        )

    def _scene_layout(self) -> sidecar.ViewState:
        names = {layer.name for layer in self.document.net.layer}
        hints = self.scene.data_hints
        return sidecar.ViewState(
            dict(self.scene.manual),
            self.scene.downward,
            set(self.scene.expanded),
            {k: list(v) for k, v in hints.recorded.items()},
            dict(hints.typed),
        ).only(names)

    def _layout_edited(self, label: str) -> None:
        """A drag, a direction switch, an auto layout or an assumed input shape on the canvas: one
        undoable edit of the document's layout (a document without one keeps it on the canvas only)."""
        if self.controller is None or getattr(self.document, "layout", None) is None:
            return
        state = self._scene_layout()
        names = {layer.name for layer in self.document.net.layer}
        if state != self.document.layout.only(names) and not self.controller.set_layout(state, label):
            self._load_sidecar()  # refused: the canvas goes back to the document's layout
            self.schedule()

    def set_assumed_shape(self, blob: str, shape: tuple[int, ...] | None) -> None:
        """The shape to assume for ``blob`` while its data layer cannot read its source (None: none);
        part of the layout (undoable, written beside the net on Save), never in the prototxt. Every
        shape after it follows."""
        typed = self.scene.data_hints.typed
        if shape is None:
            typed.pop(blob, None)
        else:
            typed[blob] = tuple(shape)
        self.scene.rebuild()
        self._layout_edited("Assume an input shape" if shape is not None else "Forget an assumed shape")

    # ---- selection ------------------------------------------------------------------------------
    def _scene_selection_changed(self) -> None:
        if self._syncing or self.scene._building or self.selection is None:
            return
        self._syncing = True
        self.selection.select(self.scene.selected_indices())
        self._syncing = False

    def _selection_changed(self, indices) -> None:
        if self._syncing:
            return
        self._syncing = True
        self.scene.select_indices(indices)
        self._syncing = False
        self._bring_into_view(indices)

    def _bring_into_view(self, indices) -> None:
        """A layer chosen elsewhere (the inspector, the filler panel's list) scrolls into view if it
        is off screen; a click on the canvas never moves it."""
        if not indices:
            return
        if self._pending:  # the canvas has not caught up with an edit yet: once it has
            self._reveal_after = list(indices)
            return
        key = self.scene.graph.keys_of_index.get(indices[-1])
        item = self.scene.item_of(key) if key else None
        if item is not None and not self.view.visible_scene_rect().contains(item.sceneBoundingRect()):
            self.view.ensureVisible(item, 40, 40)
            self.view.viewport_changed.emit()

    def _select_later(self, indices: list[int]) -> None:
        if self.selection is not None:
            self.selection.select(indices)

    def _select_all(self) -> None:
        for item in self.scene.nodes.values():
            item.setSelected(True)

    def mark_found(self, pattern) -> int:
        """Ring the boxes whose layer name or type matches ``pattern`` (None: none); how many."""
        found = set()
        if pattern is not None:
            for key, item in self.scene.nodes.items():
                layer = item.node.layer
                if pattern.search(layer.name) or pattern.search(layer.type):
                    found.add(key)
        if found != self.scene.found:
            self.scene.found = found
            for item in self.scene.nodes.values():
                item.update()
        return len(found)

    def reveal(self, key: str) -> None:
        """Select a layer's box (or band) and bring it into view: what a click on a problem does."""
        item = self.scene.item_of(key)
        if item is None:
            return
        self.scene.clearSelection()
        item.setSelected(True)
        self.view.centerOn(item)

    def _rename_selected(self) -> None:
        keys = [k for k in self.scene.selected_keys() if k in self.scene.nodes]
        if len(keys) == 1:
            self.view.begin_rename(keys[0])

    def show_message(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))
        self._message_timer.start(6000)


def _separator(parent: QWidget) -> QAction:
    separator = QAction(parent)
    separator.setSeparator(True)
    return separator
