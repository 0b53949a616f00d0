"""TEMPORARY: the layers in order, where the graph editor (graph_view/) will go.

A read-only list that redraws from the document on every net change: enough to see that the
views agree until the canvas replaces it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from app.document import NET_KINDS, Change, Document

# A hint of the family colours the canvas will use (see DESIGN.md, "The picture to beat").
_FAMILY = {
    "vision": ({"Convolution", "Deconvolution", "InnerProduct", "Embed"}, "#3b6fb6"),
    "neuron": ({"ReLU", "PReLU", "ELU", "Sigmoid", "TanH", "Dropout", "AbsVal", "Power", "BNLL"}, "#c0413b"),
    "pooling": ({"Pooling", "LRN", "BatchNorm", "Scale", "MVN"}, "#3f8f4f"),
    "merge": ({"Concat", "Eltwise", "Slice", "Split", "Flatten", "Reshape"}, "#8a5a2b"),
}


def _colour(layer_type: str) -> str:
    if "Data" in layer_type or layer_type == "Input":
        return "#6b7280"
    if "Loss" in layer_type or layer_type in ("Accuracy", "Softmax"):
        return "#7c3aed"
    return next((c for types, c in _FAMILY.values() if layer_type in types), "#374151")


class LayerList(QWidget):
    def __init__(self, doc: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        title = QLabel("Layers in order: a stand-in until the graph editor arrives", self)
        title.setObjectName("placeholderTitle")
        title.setStyleSheet("color: #6b7280; padding: 10px 12px 6px 12px;")
        self.list = QListWidget(self)
        self.list.setAlternatingRowColors(True)
        self.list.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.list.setSelectionMode(QListWidget.SelectionMode.NoSelection)
        self.list.setFrameShape(QListWidget.Shape.NoFrame)
        self.list.setStyleSheet("QListWidget { padding: 4px 8px; } QListWidget::item { padding: 5px 4px; }")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(title)
        layout.addWidget(self.list, 1)
        doc.changed.connect(self._on_change)
        self.refresh()

    def _on_change(self, change: Change) -> None:
        if change.kind in NET_KINDS:
            self.refresh()

    def refresh(self) -> None:
        self.list.clear()
        for layer in self.doc.net.layer:
            phases = ", ".join(
                "TRAIN" if rule.phase == 0 else "TEST" for rule in layer.include if rule.HasField("phase")
            )
            wiring = f"{', '.join(layer.bottom) or '∅'}  →  {', '.join(layer.top) or '∅'}"
            text = f"{layer.name}   ·   {layer.type}" + (f"   [{phases}]" if phases else "")
            item = QListWidgetItem(f"{text}\n      {wiring}")
            item.setForeground(QColor(_colour(layer.type)))
            item.setData(Qt.ItemDataRole.ToolTipRole, wiring)
            self.list.addItem(item)
