""" "View Data…" under the inspector's fields when the selected layer reads a source (a Data layer's
LMDB, ImageData's image list, HDF5Data's file list): the Dataset view of what that source holds,
its relative names looked for as a run looks for them (engine.data.paths.beside_document)."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from app.dataset.view import DatasetView
from engine.data.paths import beside_document
from engine.data.source_browse import browse_layer
from proto import caffe_pb2

VIEWABLE = {"Data": "data_param", "ImageData": "image_data_param", "HDF5Data": "hdf5_data_param"}


def source_of(layer: caffe_pb2.LayerParameter) -> str:
    """The source a viewable layer names ("" for any other layer, or one without a source)."""
    field = VIEWABLE.get(layer.type)
    return getattr(layer, field).source if field and not layer.bottom else ""


class LayerDataButton(QWidget):
    def __init__(self, window: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.main = window  # the main window (QWidget.window() is a method)
        self.view: DatasetView | None = None
        self.button = QPushButton("View Data…")
        self.button.setToolTip("What this layer's source holds: class counts and thumbnails")
        self.button.clicked.connect(self.open_view)
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 10, 6)
        row.addWidget(self.button)
        row.addStretch()
        window.selection.changed.connect(self.refresh)
        window.doc.changed.connect(self.refresh)
        self.refresh()

    def layer(self) -> caffe_pb2.LayerParameter | None:
        index = self.main.selection.current
        net = self.main.doc.net
        return net.layer[index] if index is not None and 0 <= index < len(net.layer) else None

    def refresh(self, *_args: object) -> None:
        layer = self.layer()
        self.setVisible(layer is not None and bool(source_of(layer)))

    def open_view(self) -> DatasetView | None:
        layer = self.layer()
        if layer is None or not source_of(layer):
            return None
        layer = caffe_pb2.LayerParameter.FromString(layer.SerializeToString())  # the layer as it is now
        paths = beside_document(self.main.doc)  # where a run of this net looks, as the canvas does
        source = paths.resolve(source_of(layer))
        mean = layer.transform_param.mean_file
        self.view = DatasetView(
            source,
            self.main,
            browse=lambda: browse_layer(layer, paths),
            title=f"Data of layer '{layer.name}' ({layer.type}): {source_of(layer)}",
            mean_file=paths.resolve(mean) if mean else None,
        )
        self.view.show()
        return self.view
