"""The Initialisation panel: how each parameter blob of the selected layer starts.

A row per blob (role, inferred shape, filler and the fields it reads) and a preview of the blob
as the engine draws it. Edits go to the document as undoable commands; everything shown is
recomputed from the document, off the GUI thread: the net is rebuilt, seeded, exactly as
``main.py fill --phase P --seed S`` builds it (see ``draws``), so the previewed values are the ones
``fill`` writes. A data source that is not here (a downloaded net's LMDB) is replaced by the
input shape the canvas assumes for it (``assumed``), and the panel says so. When the net cannot be
built (no shape to assume, a filler refusing its settings) the rows keep the last shapes known and
the preview says why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app import trust
from app.commands import Command, CommandError
from app.document import NET_KINDS, Change, Document
from app.fillers.draws import Initial, initialise, unassumed_sources
from app.fillers.jobs import Jobs
from app.fillers.preview import PreviewView
from app.fillers.row import FillerRow
from app.fillers.slots import Slot, describe, effective, is_set, slots
from app.fillers.summary import Preview, summarise
from app.form_edits import layer_edit
from app.selection import Selection
from engine import pymodules
from engine.data_shapes import Shape
from graph_view.style import ASSUMED
from proto import caffe_pb2


class FillerPanel(QWidget):
    built = Signal()  # the net was (re)built for the current document, phase and seed
    previewed = Signal()  # the preview shows (or explains the absence of) the chosen blob

    def __init__(
        self,
        doc: Document,
        push: Callable[[Command], None],
        selection: Selection,
        parent: QWidget | None = None,
        assumed: Callable[[int], Mapping[str, Sequence[Shape]]] | None = None,
        facts: Callable[[int], set[str]] | None = None,
    ) -> None:
        """``assumed(phase)``: data layer name -> the top shapes the canvas assumes for it in that
        phase's net (its source is not here); ``facts(phase)``: those whose shapes are known facts
        (the bundled MNIST before Train makes it), not said to be assumed."""
        super().__init__(parent)
        self.doc, self.push, self.selection = doc, push, selection
        self._assumed = assumed
        self._facts = facts
        self._inputs: Mapping[str, Sequence[Shape]] = {}  # what the last build was asked to assume
        self.phase, self.seed, self.blob = caffe_pb2.TRAIN, 1, 0
        self.initial: Initial | None = None
        self.rows: list[FillerRow] = []
        self._rows_key: tuple = ()
        self._known: dict[tuple[str, str], list[tuple[int, ...]]] = {}  # last shapes seen, per layer
        self._pending = True
        self.build_jobs, self.preview_jobs = Jobs(self), Jobs(self)
        self.build_jobs.done.connect(self._built)
        self.preview_jobs.done.connect(self._previewed)
        self.preview_jobs.failed.connect(lambda m: self._explain(f"Could not draw the preview: {m}"))
        for jobs in (self.build_jobs, self.preview_jobs):
            jobs.busy_changed.connect(self._update_busy)
        self._timer = QTimer(self, singleShot=True, interval=150)
        self._timer.timeout.connect(self._build)
        self._make_widgets()
        doc.changed.connect(self._on_doc)
        selection.changed.connect(self._on_selection)
        guard = trust.guard_of(doc)
        if guard is not None:
            guard.changed.connect(self._redraw)  # a folder trusted or taken back: draw again
        self._refresh_layers()
        self._refresh_rows()

    # ---- widgets ------------------------------------------------------------------------------
    def _make_widgets(self) -> None:
        self.setObjectName("fillerPanel")  # its colours come from the application theme (app.themes)
        self.layer_combo = QComboBox(self)
        self.layer_combo.setPlaceholderText("choose a layer with weights")
        self.layer_combo.setMinimumWidth(110)  # long names elide: the dock may be narrow
        self.layer_combo.activated.connect(lambda i: self.selection.select(self.layer_combo.itemData(i)))
        self.phase_combo = QComboBox(self)
        self.phase_combo.addItems(["TRAIN", "TEST"])
        self.phase_combo.setToolTip("Which phase's net to build: shapes and draws follow it")
        self.phase_combo.currentIndexChanged.connect(self._set_phase)
        self.seed_spin = QSpinBox(self)
        self.seed_spin.setRange(0, 2**31 - 1)
        self.seed_spin.setValue(self.seed)
        self.seed_spin.setPrefix("seed ")
        self.seed_spin.setMinimumWidth(96)  # room for six digits, not for 2**31
        self.seed_spin.setToolTip("The seed of the draw, as main.py fill --seed")
        self.seed_spin.valueChanged.connect(self._set_seed)
        self.reseed = QPushButton("Reseed", self)
        self.reseed.setToolTip("Draw again with the next seed")
        self.reseed.clicked.connect(lambda: self.seed_spin.setValue(self.seed + 1))
        self.busy = QLabel("drawing…", self)
        self.busy.setObjectName("busyLabel")
        self.busy.hide()

        # Two rows: the layer's name gets the column's whole width, the draw's settings the next
        # line (in one row they forced a column wider than a 1280-px window can spare).
        top = QVBoxLayout()
        top.addWidget(self.layer_combo)
        draw = QHBoxLayout()
        draw.addWidget(self.phase_combo)
        draw.addWidget(self.seed_spin, 1)
        draw.addWidget(self.reseed)
        top.addLayout(draw)
        self.title = QLabel(self)
        self.title.setObjectName("panelTitle")
        self.title.setWordWrap(True)
        self.assumed_note = QLabel(self)
        self.assumed_note.setObjectName("assumedNote")
        self.assumed_note.setWordWrap(True)
        self.assumed_note.setStyleSheet(f"color: {ASSUMED};")
        self.assumed_note.hide()
        self.rows_box = QVBoxLayout()
        self.rows_box.setSpacing(6)
        self.group = QButtonGroup(self)
        self.preview = PreviewView(self)
        self.footer = QLabel(self)
        self.footer.setObjectName("fillFooter")
        self.footer.setWordWrap(True)
        self.footer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        body = QWidget(self)
        column = QVBoxLayout(body)
        column.setContentsMargins(10, 8, 10, 10)
        column.setSpacing(8)
        title_line = QHBoxLayout()
        title_line.addWidget(self.title, 1)
        title_line.addWidget(self.busy)
        column.addLayout(title_line)
        column.addWidget(self.assumed_note)
        column.addLayout(self.rows_box)
        line = QFrame(body)
        line.setFrameShape(QFrame.Shape.HLine)
        line.setObjectName("fillerRule")
        column.addWidget(line)
        column.addWidget(self.preview)
        column.addWidget(self.footer)
        column.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(body)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 6, 6, 0)
        outer.addLayout(top)
        outer.addWidget(scroll, 1)

    # ---- what the panel follows ---------------------------------------------------------------
    @property
    def index(self) -> int | None:
        return self.selection.current

    def current_slots(self) -> list[Slot]:
        return slots(self.doc.layer(self.index)) if self.index is not None else []

    def _on_doc(self, change: Change) -> None:
        if change.kind not in NET_KINDS:
            return
        self._forget()
        self._refresh_layers()
        self._refresh_rows()
        self._schedule()

    def _on_selection(self, _layers: tuple[int, ...]) -> None:
        self.blob = 0
        self._refresh_layers()
        self._refresh_rows()
        self._request_preview()

    def _set_phase(self, i: int) -> None:
        self.phase = caffe_pb2.TRAIN if i == 0 else caffe_pb2.TEST
        self._redraw()

    def _set_seed(self, seed: int) -> None:
        self.seed = seed
        self._redraw()

    def _redraw(self) -> None:
        self._forget()
        self._schedule()
        self._refresh_rows()

    def _forget(self) -> None:
        """Drop the draws and any answer still on its way: they belong to a net that is gone."""
        self.initial = None
        self.build_jobs.cancel()
        self.preview_jobs.cancel()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.initial is not None and self.initial.error is not None:
            self._forget()  # a data source that was missing may have been prepared meanwhile
        if self._pending or self.initial is None:
            self._schedule()

    def _schedule(self) -> None:
        """Rebuild soon; only while the panel is on screen (a hidden panel catches up when shown)."""
        self._pending = not self.isVisible()
        if not self._pending:
            self._timer.start()

    # ---- building and drawing (off the GUI thread) ----------------------------------------------
    def _build(self) -> None:
        index = self.index
        if not self.isVisible():  # hidden (or its window closed) since the request: catch up when shown
            self._pending = True
            return
        if index is None or (self.initial is not None and self.initial.covers(index)):
            return
        net = caffe_pb2.NetParameter()
        net.CopyFrom(self.doc.net)
        phase, seed = self.phase, self.seed
        where = pymodules.folders(self.doc.net_path, self.doc.solver_path)
        guard = trust.guard_of(self.doc)
        if guard is not None:
            guard.ensure(ask_again=False)  # untrusted: its Python layers say "not run" meanwhile
        inputs = self._inputs = self._assumed(phase) if self._assumed is not None else {}
        self.build_jobs.submit(lambda: initialise(net, phase, seed, index, where, inputs))

    def check_assumed(self) -> None:
        """The canvas was rebuilt: draw again if the shapes it assumes for this phase changed."""
        if self._assumed is not None and self.isVisible() and self._assumed(self.phase) != self._inputs:
            self._redraw()

    def _built(self, initial: Initial) -> None:
        self.initial = initial
        if initial.error is None:
            for index, layer in enumerate(self.doc.net.layer):
                shapes = initial.shapes(index)
                if shapes is not None:
                    self._known[(layer.name, layer.type)] = shapes
        self._refresh_rows()
        self.built.emit()
        self._request_preview()

    def _request_preview(self) -> None:
        index, found = self.index, self.current_slots()
        if index is None or not found:
            self._explain(self._placeholder())
            return
        slot = found[min(self.blob, len(found) - 1)]
        layer = self.doc.layer(index)
        title = self._preview_title(layer, slot)
        if self.initial is None or not self.initial.covers(index):
            self._schedule()
            self.preview.show_message("Drawing…", title)
            return
        why = self._why_not(self.initial, index, slot)
        if why:
            self._explain(why, title)
            return
        values, filler = self.initial.blobs[index][self.blob], effective(layer, slot)
        assert filler is not None  # _why_not ruled out blobs that no filler fills
        kind, role = layer.type, slot.family
        self.preview_jobs.submit(lambda: summarise(values, filler, kind, role))

    def _why_not(self, initial: Initial, index: int, slot: Slot) -> str:
        """Why blob ``self.blob`` of layer ``index`` has no preview; empty when it has one."""
        phase, name = self._phase_name(), self.doc.layer(index).name
        if initial.error is not None:
            error = initial.error
            sources = unassumed_sources(self.doc.net, self.phase, self._inputs)
            unknown = [name for name in sources if f"'{name}'" in error]
            if unknown:  # its source failed, and no shape follows from the layer's fields
                hint = (
                    f" Select '{unknown[0]}' and type the shape of its data in the inspector (Assumed input"
                    " shape): the shapes and draws here follow it."
                )
            elif "cannot open" in error:
                hint = " Shapes and draws appear once every data source opens."
            else:
                hint = ""
            return f"The {phase} net cannot be built, so nothing can be drawn: {initial.error}.{hint}"
        if index not in initial.blobs:
            return f"'{name}' is not part of the {phase} net: switch the phase to see it."
        if self.blob >= len(initial.blobs[index]):
            return f"'{name}' has no blob {self.blob} in the {phase} net."
        if slot.path is None:
            return f"{slot.role}: {slot.note}."
        return ""

    def _previewed(self, preview: Preview) -> None:
        index = self.index
        if index is None:
            return
        layer = self.doc.layer(index)
        found = self.current_slots()
        slot = found[min(self.blob, len(found) - 1)]
        self.preview.show_preview(preview, self._preview_title(layer, slot))
        command = f"main.py fill --model NET --phase {self._phase_name()} --seed {self.seed}"
        self.footer.setText(
            f"These are the values <code>{command}</code> writes for this blob (key "
            f"<code>{layer.name}/{self.blob}</code> of its .npz). Every filler before it in the net draws "
            "first, so a change upstream changes these values too, never their distribution."
        )
        self.previewed.emit()

    def _explain(self, text: str, title: str = "") -> None:
        self.preview.show_message(text, title)
        self.footer.setText("")
        self.previewed.emit()

    def _update_busy(self) -> None:
        self.busy.setVisible(self.build_jobs.busy or self.preview_jobs.busy)

    # ---- rows -----------------------------------------------------------------------------------
    def _refresh_layers(self) -> None:
        self.layer_combo.blockSignals(True)
        self.layer_combo.clear()
        for i, layer in enumerate(self.doc.net.layer):
            if slots(layer):
                phases = "/".join(caffe_pb2.Phase.Name(r.phase) for r in layer.include if r.HasField("phase"))
                self.layer_combo.addItem(
                    f"{layer.name}  ·  {layer.type}" + (f"  [{phases}]" if phases else ""), i
                )
        self.layer_combo.setCurrentIndex(
            self.layer_combo.findData(self.index) if self.index is not None else -1
        )
        self.layer_combo.blockSignals(False)

    def _refresh_rows(self) -> None:
        index, found = self.index, self.current_slots()
        key = (index, self.doc.layer(index).type if index is not None else None, tuple(found))
        if key != self._rows_key:
            self._make_rows(found)
            self._rows_key = key
        self._show_assumed()
        if index is None:
            self.title.setText("")
            return
        layer = self.doc.layer(index)
        what = (
            f"{len(found)} parameter blob{'s' if len(found) != 1 else ''}" if found else "no parameter blobs"
        )
        self.title.setText(f"{layer.name} ({layer.type}): {what}")
        built = self.initial is not None and self.initial.covers(index)
        shapes = (
            self.initial.shapes(index)
            if self.initial is not None and built and not self.initial.error
            else None
        )
        if shapes is None:
            shapes = self._known.get((layer.name, layer.type))
        for k, row in enumerate(self.rows):
            shape = shapes[k] if shapes is not None and k < len(shapes) else None
            row.set_state(effective(layer, row.slot), is_set(layer, row.slot), shape, not built)
            row.setProperty("current", k == self.blob)
            row.style().polish(row)

    def _make_rows(self, found: list[Slot]) -> None:
        for row in self.rows:
            self.group.removeButton(row.radio)
            row.deleteLater()
        self.rows = []
        for k, slot in enumerate(found):
            row = FillerRow(slot, self)
            self.group.addButton(row.radio, k)
            row.radio.setChecked(k == self.blob)
            row.chosen.connect(lambda k=k: self._choose(k))
            row.edited.connect(lambda filler, slot=slot: self._edit(slot, filler))
            self.rows_box.addWidget(row)
            row.show()  # now, not when the event loop gets to it: the row is usable at once
            self.rows.append(row)

    def _choose(self, k: int) -> None:
        if k != self.blob:
            self.blob = k
            self._refresh_rows()
            self._request_preview()

    def _edit(self, slot: Slot, filler: caffe_pb2.FillerParameter) -> None:
        """The inspector's validated edit of the same field: a filler the engine refuses is refused here."""
        index = self.index
        if index is None or slot.path is None:
            return
        try:
            command = layer_edit(self.doc, index, slot.path, filler)
            command.text = f"{self.doc.layer(index).name}: {slot.role} filler {describe(filler)}"
            self.push(command)
        except CommandError as e:
            self._explain(f"Not changed: {e}")
            self._refresh_rows()

    def _show_assumed(self) -> None:
        """Say which input shapes the shapes and draws rest on, when a data source is not here."""
        initial = self.initial
        used = initial.assumed if initial is not None and initial.error is None else {}
        if used and self._facts is not None:
            known = self._facts(initial.phase) if initial is not None else set()
            used = {name: tops for name, tops in used.items() if name not in known}
        if not used:
            self.assumed_note.hide()
            return
        shapes = ", ".join(f"{name} {' + '.join(map(dims, tops))}" for name, tops in used.items())
        many = len(used) > 1
        text = f"Input shape{'s' * many} assumed: {shapes} (data source{'s' * many} not found)."
        if initial is not None and not initial.same_as_fill:
            text += " A data layer comes after a filler here: fill's values will differ, not their kind."
        self.assumed_note.setText(text)
        self.assumed_note.show()

    # ---- words ----------------------------------------------------------------------------------
    def _phase_name(self) -> str:
        return caffe_pb2.Phase.Name(self.phase)

    def _preview_title(self, layer: caffe_pb2.LayerParameter, slot: Slot) -> str:
        filler = effective(layer, slot)
        return f"{layer.name} · {slot.role}" + (f" · {describe(filler)}" if filler is not None else "")

    def _placeholder(self) -> str:
        if self.index is None:
            return (
                "Choose a layer with weights (Convolution, InnerProduct, PReLU, Scale, …) above or on the "
                "canvas to see how each of its parameter blobs starts."
            )
        layer = self.doc.layer(self.index)
        return f"'{layer.name}' ({layer.type}) learns no parameters: there is nothing to initialise."


def dims(shape: Sequence[int]) -> str:
    return "×".join(map(str, shape)) or "scalar"
