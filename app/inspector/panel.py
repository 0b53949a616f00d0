"""The inspector: the selected layer's fields, generated from the schema, edited by command.

It shows the fields every layer has (name, type, bottom, top; param, loss_weight,
propagate_down; phase, include, exclude) and only the ``*_param`` messages the layer's type
reads. With no layer selected it shows the net's own fields. An edit becomes one command through
``app.form_edits`` and ``push``; a refused edit leaves the document as it was, shows why, and puts
the document's value back in the form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import text_format
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QVBoxLayout, QWidget

from app.commands import Command, CommandError
from app.document import NET_KINDS, Change, Document
from app.form_edits import layer_edit, net_edit
from app.forms import FormOptions, MessageForm
from app.forms.group import Group
from app.inspector.header import LayerHeader
from app.inspector.trained import trained_text
from app.layer_params import (
    COMMON_FIELDS,
    IDENTITY_FIELDS,
    LEARNING_FIELDS,
    RULE_FIELDS,
    param_fields,
    stray_params,
)
from app.refusal import RefusalLabel
from engine.fillers import filler_types
from engine.layers import layer_types
from graph_view.document_api import Kind
from proto import caffe_pb2

_LAYER = caffe_pb2.LayerParameter.DESCRIPTOR
_NET_FIELDS = ("name", "force_backward", "state", "debug_info")
_TITLES = {"transform_param": "Transform", "loss_param": "Loss"}


def _title(param_field: str, layer_type: str) -> str:
    return _TITLES.get(param_field) or f"{layer_type} parameters"


class Inspector(QWidget):
    """``refused(message)`` fires when an edit is not allowed; ``message`` holds it for the user."""

    refused = Signal(str)

    def __init__(
        self,
        doc: Document,
        selection,
        push: Callable[[Command], None],
        parent: QWidget | None = None,
        before_edit: Callable[[], object] | None = None,
    ):
        """``before_edit()`` runs before an edit is worked out (the window applies typed text)."""
        super().__init__(parent)
        self.doc, self.selection, self._push = doc, selection, push
        self._before_edit = before_edit or (lambda: None)
        self.options = FormOptions(
            choices={"LayerParameter.type": layer_types, "FillerParameter.type": filler_types},
            completions={"LayerParameter.bottom": self._blob_names, "LayerParameter.top": self._blob_names},
            no_reset=frozenset({"LayerParameter.name", "LayerParameter.type", "NetParameter.name"}),
        )
        self.header = LayerHeader(self)
        self.message = RefusalLabel(self)
        self.trained = QLabel(self)  # the layer's blobs in a model opened with the net
        self.trained.setObjectName("trainedWeights")
        self.trained.setWordWrap(True)
        self.trained.setContentsMargins(10, 2, 10, 4)
        self.trained.hide()
        self.scroll = QScrollArea(self)  # type: ignore[assignment, method-assign]
        self.scroll.setWidgetResizable(True)  # type: ignore[attr-defined]
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)  # type: ignore[attr-defined]
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.header)
        layout.addWidget(self.trained)
        layout.addWidget(self.scroll, 1)  # type: ignore[arg-type]
        layout.addWidget(self.message)  # under the fields: its coming and going moves none of them

        self.forms: dict[str, MessageForm] = {}  # section key -> form, for the page on show
        self._below: list[QWidget] = []  # panels under the forms on every page (add_below_forms)
        self.sections: dict[str, Group] = {}
        self._page_key: tuple[str, ...] | None = None
        self._shown_index: int | None = None
        self.stray = QLabel()
        doc.changed.connect(self._on_document_changed)
        selection.changed.connect(self._on_selection_changed)
        self.refresh()

    # ---- what is shown ------------------------------------------------------------------
    @property
    def index(self) -> int | None:
        current = self.selection.current
        return current if current is not None and current < len(self.doc.net.layer) else None

    def refresh(self) -> None:
        index = self.index
        if index is None:
            self._shown_index = None
            self._ensure_page(("net",))
            self.header.show_net(self.doc.net)
            self.trained.hide()
            self.forms["net"].set_message(self.doc.net)
            return
        layer = self.doc.layer(index)
        fresh = self._ensure_page(("layer", layer.type, *param_fields(layer.type)))
        if fresh or index != self._shown_index:  # a new layer: open the folded sections it uses
            for key, names in (("learning", LEARNING_FIELDS), ("rules", RULE_FIELDS)):
                used = any(len(getattr(layer, n)) if n != "phase" else layer.HasField(n) for n in names)
                self.sections[key].set_expanded(used)
        self._shown_index = index
        others = len(self.selection.layers) - 1
        self.header.show_layer(layer, index, len(self.doc.net.layer), max(others, 0))
        blobs = getattr(self.doc, "weights", {}).get(layer.name)
        self.trained.setText(trained_text(blobs, self.doc.weights_path) if blobs else "")
        self.trained.setVisible(bool(blobs))
        for form in self.forms.values():
            form.set_message(layer)
        stray = stray_params(layer)
        self.stray.setText(f"Also set, but not read by {layer.type}: {', '.join(stray)}" if stray else "")
        self.stray.setVisible(bool(stray))

    def show_generated(self, layer: caffe_pb2.LayerParameter, note: str) -> None:
        """A layer Caffe adds itself (a Split in the Splits view): what it is, read-only."""
        self._ensure_page(("generated",))
        self._shown_index = None
        self.header.show_generated(layer)
        self.generated_text.setText(f"{note}\n\n{text_format.MessageToString(layer).strip()}")

    def form_for(self, path: str) -> MessageForm:
        """The form that edits ``path`` on this page (``convolution_param.num_output`` -> its section)."""
        head = path.split(".")[0]
        if head in self.forms:
            return self.forms[head]
        return next(f for f in self.forms.values() if head in f.rows)

    def editor(self, path: str) -> QWidget:
        return self.form_for(path).editor(path)

    def add_below_forms(self, widget: QWidget) -> None:
        """Show ``widget`` under the forms, on every page. A panel that comes and goes as the user
        edits (the assumed input shape) goes here, below every field, so that no field moves
        under the caret or the next click when it appears."""
        self._below.append(widget)
        page = self.scroll.widget()  # type: ignore[attr-defined]
        layout = page.layout() if page is not None else None
        if isinstance(layout, QVBoxLayout):
            self._place(widget, layout, layout.count() - 1)  # above the page's closing stretch

    def _ensure_page(self, key: tuple[str, ...]) -> bool:
        """Build the page for ``key`` unless it is the one shown; True when it was built."""
        if key == self._page_key:
            return False
        self._page_key = key
        self.forms.clear()
        self.sections.clear()
        page = QWidget()
        page.setObjectName("inspectorPage")
        layout = QVBoxLayout(page)
        # The page is at least as tall as its rows, at once: a panel appearing under the forms (the
        # assumed input shape) grows the page in the same pass instead of squeezing the sections above
        # it until the scroll area's deferred resize, which moved the next field by ~50 px when busy.
        layout.setSizeConstraint(QVBoxLayout.SizeConstraint.SetMinimumSize)
        layout.setContentsMargins(12, 8, 12, 12)
        layout.setSpacing(6)
        if key[0] == "generated":
            self.generated_text = QLabel(page)
            self.generated_text.setObjectName("inspectorNote")
            self.generated_text.setWordWrap(True)
            self.generated_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            layout.addWidget(self.generated_text)
        elif key[0] == "net":
            self._section(
                layout,
                "net",
                "Net",
                MessageForm(caffe_pb2.NetParameter.DESCRIPTOR, "", _NET_FIELDS, self.options),  # type: ignore[arg-type]
            )
        else:
            layer_type, params = key[1], key[2:]
            self._section(layout, "identity", "Layer", self._layer_form(IDENTITY_FIELDS))
            for name in params:
                sub = _LAYER.fields_by_name[name].message_type
                self._section(
                    layout,
                    name,
                    _title(name, layer_type),
                    MessageForm(sub, f"{name}.", None, self.options),  # type: ignore[arg-type]
                )
            self._section(layout, "learning", "Learning", self._layer_form(LEARNING_FIELDS), expanded=False)
            self._section(layout, "rules", "Phase && rules", self._layer_form(RULE_FIELDS), expanded=False)
            self.stray = QLabel(page)
            self.stray.setObjectName("inspectorNote")
            self.stray.setWordWrap(True)
            layout.addWidget(self.stray)
        for widget in self._below:  # moved onto the new page before the old one goes
            self._place(widget, layout, layout.count())
        layout.addStretch(1)
        old = self.scroll.takeWidget()  # type: ignore[attr-defined]
        self.scroll.setWidget(page)  # type: ignore[attr-defined]
        if old is not None:
            old.deleteLater()
        return True

    @staticmethod
    def _place(widget: QWidget, layout: QVBoxLayout, index: int) -> None:
        hidden = widget.isHidden()  # a widget given a new parent is hidden until shown again
        layout.insertWidget(index, widget)
        widget.setHidden(hidden)

    def _layer_form(self, fields: tuple[str, ...]) -> MessageForm:
        return MessageForm(_LAYER, "", fields, self.options)  # type: ignore[arg-type]

    def _section(
        self, layout: QVBoxLayout, key: str, title: str, form: MessageForm, expanded: bool = True
    ) -> None:
        group = Group(title, expanded=expanded, section=True)
        group.add_widget(form)
        form.edited.connect(self._on_edited)
        form.invalid.connect(self._refuse)
        layout.addWidget(group)
        self.forms[key] = form
        self.sections[key] = group

    # ---- edits --------------------------------------------------------------------------
    def _on_edited(self, path: str, value: Any) -> None:
        self._before_edit()  # the command is worked out from the net as it will be when pushed
        index = self.index
        try:
            command = (
                net_edit(self.doc, path, value) if index is None else layer_edit(self.doc, index, path, value)
            )
            self._push(command)
        except CommandError as e:
            self._refuse(str(e))
            return
        self.message.hide()

    def _refuse(self, message: str) -> None:
        self.message.refuse(message)
        self.refused.emit(message)
        QTimer.singleShot(0, self.refresh)  # after the widget that refused has finished its signal

    def _on_selection_changed(self, _layers) -> None:
        self.message.hide()
        self.refresh()

    def _on_document_changed(self, change: Change) -> None:
        if change.kind in NET_KINDS or change.kind == Kind.WEIGHTS_CHANGED:
            self.refresh()

    def _blob_names(self) -> list[str]:
        names: dict[str, None] = {}
        for layer in self.doc.net.layer:
            names.update(dict.fromkeys([*layer.bottom, *layer.top]))
        return list(names)


__all__ = ["COMMON_FIELDS", "Inspector"]
