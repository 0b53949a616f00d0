"""The inspector's "Assumed input shape" box: for a data layer whose source cannot be read (the LMDB
of a downloaded net is not here), it says in full why and what the canvas's shapes rest on, and
takes the shape to assume for each of its tops. It sits under the layer's fields, so that its
coming and going never moves the field being typed in. What is typed is kept in the layout sidecar, never
in the prototxt; every wire, parameter count and FLOP figure after the layer follows it.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QFormLayout, QFrame, QLabel, QLineEdit, QVBoxLayout, QWidget

from engine.data_shapes import Shape, parse_shape, reads_source
from graph_view.graph import build
from graph_view.validation import validate
from proto import caffe_pb2


def train_assumptions(graph: Any) -> dict[str, list[Shape]]:
    """Data layer name -> the TRAIN phase's assumed top shapes (all known), as the canvas has them."""
    return assumptions(graph, caffe_pb2.TRAIN)


def train_facts(graph: Any) -> set[str]:
    """The TRAIN data layers whose shapes are the data's own though it is not read yet (the
    bundled MNIST before Train makes it): built from those shapes, but nothing assumed."""
    return facts(graph, caffe_pb2.TRAIN)


def facts(graph: Any, phase: int) -> set[str]:
    """``phase``'s data layers whose shapes are facts (the bundled MNIST), as the canvas has them."""
    g = _graph_for(graph, phase)
    return set() if g is None else {g.layers[key].name for key, a in g.assumed.items() if a.fact}


def _graph_for(graph: Any, phase: int) -> Any:
    scene = graph.scene
    if scene.phase == phase:
        return scene.graph
    if any(reads_source(layer) for layer in scene.net.layer):
        return build(scene.net, phase, hints=scene.data_hints)
    return None


def assumptions(graph: Any, phase: int) -> dict[str, list[Shape]]:
    """Data layer name -> the assumed top shapes (all known) of ``phase``'s net, as the canvas has
    them (its own view when it shows that phase, else the same rules and hints for that phase)."""
    g = _graph_for(graph, phase)
    if g is None:
        return {}
    return {
        g.layers[key].name: [s for s in a.tops if s is not None] for key, a in g.assumed.items() if a.complete
    }


class AssumedShapeBox(QFrame):
    def __init__(self, graph: Any, selection: Any, parent: QWidget | None = None) -> None:
        """``graph``: the window's ``GraphEditor``; ``selection``: the shared layer selection."""
        super().__init__(parent)
        self.graph, self.selection = graph, selection
        self.setObjectName("assumedShape")
        self.setStyleSheet("QFrame#assumedShape { border-top: 1px solid palette(mid); }")
        self.title = QLabel("<b>Assumed input shape</b>", self)
        self.why = QLabel(self)
        self.why.setWordWrap(True)
        self.why.setObjectName("assumedWhy")
        self.error = QLabel(self)
        self.error.setStyleSheet("color: #b42318;")
        self.error.setWordWrap(True)
        self.error.hide()
        self.fields: dict[str, QLineEdit] = {}
        self.form = QFormLayout()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 8)  # inside the inspector's page, which has its margins
        layout.addWidget(self.title)
        layout.addWidget(self.why)
        layout.addLayout(self.form)
        layout.addWidget(self.error)
        self._tops: tuple[str, ...] = ()
        selection.changed.connect(lambda _layers: self.refresh())
        graph.scene.rebuilt.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        scene = self.graph.scene
        index = self.selection.current
        key = scene.graph.keys_of_index.get(index) if index is not None else None
        layer = scene.graph.layers.get(key) if key is not None else None
        shapes = scene.graph.shapes.get(key) if key is not None else None
        if layer is None or shapes is None or not reads_source(layer) or not shapes.data_error:
            self.hide()
            return
        messages = [p.message for p in validate(scene.graph) if p.key == key]
        self.why.setText("\n".join(messages))
        self.why.setToolTip("\n".join(messages))
        tops = tuple(layer.top)
        if tops != self._tops:
            self._rebuild_fields(tops)
        typed = scene.data_hints.typed
        for top, field in self.fields.items():
            if not field.hasFocus():
                shape = typed.get(top)
                field.setText(",".join(map(str, shape)) if shape else "")
            known = shapes.tops[tops.index(top)] if top in tops else None
            field.setPlaceholderText(",".join(map(str, known)) if known else "N,C,H,W")
        self.show()

    def _rebuild_fields(self, tops: tuple[str, ...]) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.fields = {}
        for top in tops:
            field = QLineEdit(self)
            field.setObjectName(f"assumed:{top}")
            field.setToolTip(f"The shape to assume for '{top}' while its data is not here, e.g. 32,3,224,224")
            field.editingFinished.connect(lambda top=top: self._typed(top))
            self.form.addRow(f"{top}:", field)
            self.fields[top] = field
        self._tops = tops

    def _typed(self, top: str) -> None:
        text = self.fields[top].text().strip()
        current = self.graph.scene.data_hints.typed.get(top)
        try:
            shape = parse_shape(text) if text else None
        except ValueError as exc:
            self.error.setText(f"{top}: {exc}")
            self.error.show()
            return
        self.error.hide()
        if shape != current:
            self.graph.set_assumed_shape(top, shape)
