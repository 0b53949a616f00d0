"""One parameter blob of the selected layer: its role, its shape, its filler and the fields it reads.

The row only shows and reports: ``edited`` carries the whole new FillerParameter (the panel turns
it into the inspector's validated, undoable edit of the same field) and ``chosen`` asks for this
blob's preview. Field editors are the schema's own (``app.forms.editors``, as the inspector's form
makes them), one for each field the chosen filler reads (``Filler.fields`` in the engine), nothing
else; they are rebuilt only when the filler type changes, so redrawing after an edit does not take
the focus from the field being typed in.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QLabel,
    QLineEdit,
    QRadioButton,
    QSpinBox,
    QWidget,
)

from app.fillers.slots import FIELDS, FILLER_TYPES, Slot, with_field, with_type
from app.forms.docs import field_doc
from app.forms.editors import make_editor
from proto import caffe_pb2

FillerParameter = caffe_pb2.FillerParameter
_SCHEMA = FillerParameter.DESCRIPTOR.fields_by_name
# What each filler draws, in a few words (presentation: which fields it reads is the engine's).
HINTS = {
    "constant": "every value = value",
    "uniform": "U[min, max]",
    "gaussian": "N(mean, std²); sparse: keep ≈ sparse weights per output",
    "positive_unitball": "U[0, 1], each output's weights scaled to sum to 1",
    "xavier": "U[−a, a], a = √(3/n): variance 1/n",
    "msra": "N(0, 2/n): for ReLU nets (He et al.)",
    "bilinear": "a bilinear upsampling kernel in every slice",
}
LABELS = {"variance_norm": "n ="}  # the rest are labelled with their field names


def shape_text(shape: tuple[int, ...] | None, pending: bool = False) -> str:
    if shape is None:
        return "inferring the shape…" if pending else "shape unknown"
    count = math.prod(shape)
    dims = " × ".join(str(d) for d in shape) or "scalar"
    return dims if len(shape) <= 1 else f"{dims}  ({count:,} values)"


class FillerRow(QFrame):
    chosen = Signal()
    edited = Signal(object)  # the new FillerParameter

    def __init__(self, slot: Slot, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.slot = slot
        self.filler: FillerParameter | None = None
        self.editors: dict[str, QWidget] = {}
        self.setObjectName("fillerRow")
        self.radio = QRadioButton(slot.role, self)
        self.radio.setToolTip("Preview this blob below")
        self.radio.toggled.connect(self._toggled)
        self.shape = QLabel("…", self)
        self.shape.setObjectName("shapeLabel")
        self.shape.setWordWrap(True)  # a narrow dock: the count goes under the dims (see set_state)
        self.type_combo = QComboBox(self)
        self.type_combo.addItems(FILLER_TYPES)
        self.type_combo.setMinimumWidth(96)  # "positive_unitball" elides in a narrow dock
        self.type_combo.setToolTip("The filler that draws this blob's initial values")
        self.type_combo.currentTextChanged.connect(self._type_changed)
        self.hint = QLabel(self)
        self.hint.setObjectName("hintLabel")
        self.hint.setWordWrap(True)
        self.fields = QGridLayout()  # two fields a line: gaussian's mean, std and sparse fit a narrow dock
        self.fields.setHorizontalSpacing(6)
        self.fields.setVerticalSpacing(4)

        grid = QGridLayout(self)
        grid.setContentsMargins(8, 6, 8, 6)
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(4)
        grid.addWidget(self.radio, 0, 0)
        grid.addWidget(self.type_combo, 0, 1, 1, 2, Qt.AlignmentFlag.AlignRight)
        grid.addWidget(self.shape, 1, 1, 1, 2)  # its own line: a long shape never squeezes the filler
        grid.addLayout(self.fields, 2, 0, 1, 3)  # from the left edge: two fields fit a narrow dock
        grid.addWidget(self.hint, 3, 1, 1, 2)
        grid.setColumnStretch(1, 1)
        if slot.path is None:
            self.type_combo.hide()
            self.hint.setText(slot.note)

    # ---- model -> view ----------------------------------------------------------------------
    def set_state(
        self,
        filler: FillerParameter | None,
        is_set: bool,
        shape: tuple[int, ...] | None,
        pending: bool = False,
    ) -> None:
        text = shape_text(shape, pending)
        self.shape.setText(text)
        self.shape.ensurePolished()  # the theme's monospace font, before measuring
        dims = text.split("  (")[0]  # never broken inside: only the count may wrap
        self.shape.setMinimumWidth(math.ceil(self.shape.fontMetrics().horizontalAdvance(dims)) + 2)
        self.filler = filler
        if filler is None:
            return
        self.type_combo.blockSignals(True)
        if self.type_combo.findText(filler.type) < 0:  # a type the engine does not know: show it as is
            self.type_combo.addItem(filler.type)
        self.type_combo.setCurrentText(filler.type)
        self.type_combo.blockSignals(False)
        if tuple(self.editors) != FIELDS.get(filler.type, ()):
            self._build_fields(filler.type)
        for name, editor in self.editors.items():
            editor.set_value(getattr(filler, name))  # type: ignore[attr-defined]
        unset = "" if is_set else "  ·  not set in the prototxt: the engine's default"
        self.hint.setText(HINTS.get(filler.type, "unknown filler type") + unset)

    def _build_fields(self, kind: str) -> None:
        while (item := self.fields.takeAt(0)) is not None:
            if (widget := item.widget()) is not None:
                widget.hide()  # now: it is deleted only once the event loop gets to it
                widget.deleteLater()
        self.editors = {}
        for i, name in enumerate(FIELDS.get(kind, ())):
            label = QLabel(LABELS.get(name, name), self)
            label.setObjectName("fieldLabel")
            editor = _editor(name, self)
            self.fields.addWidget(label, i // 2, (i % 2) * 2)
            self.fields.addWidget(editor, i // 2, (i % 2) * 2 + 1)
            self.editors[name] = editor
            label.show()  # a layout shows new children only later, through the event loop
            editor.show()
            editor.committed.connect(partial(self._field_changed, name))  # type: ignore[attr-defined]
        if not self.editors:
            self.fields.addWidget(QLabel("no settings", self), 0, 0)
        self.fields.setColumnStretch(4, 1)

    # ---- user -> model ----------------------------------------------------------------------
    def _toggled(self, on: bool) -> None:
        if on:
            self.chosen.emit()

    def _type_changed(self, kind: str) -> None:
        if self.filler is not None and kind != self.filler.type:
            self.edited.emit(with_type(self.filler, kind))

    def _field_changed(self, name: str, value: Any) -> None:
        if self.filler is None:
            return
        old = getattr(self.filler, name)
        if value != old and not (isinstance(old, float) and abs(value - old) <= 1e-7 * abs(old)):
            self.edited.emit(with_field(self.filler, name, value))
        else:
            self.editors[name].set_value(old)  # type: ignore[attr-defined]  # tidy what was typed


def _editor(name: str, parent: QWidget) -> QWidget:
    """The schema's editor for FillerParameter field ``name``, sized for a row."""
    editor = make_editor(_SCHEMA[name])  # type: ignore[arg-type]
    editor.setParent(parent)
    editor.setObjectName(f"field_{name}")
    editor.setToolTip(field_doc("FillerParameter", name))
    if isinstance(editor, QSpinBox) and name == "sparse":
        editor.setRange(-1, 1_000_000)  # -1: every weight kept; a narrow box for a narrow dock
        editor.setSpecialValueText("off")
    if isinstance(editor, QLineEdit):
        editor.setMaximumWidth(90)
    return editor
