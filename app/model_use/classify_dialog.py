"""Model > Classify Image…: one image through the document's net, as DIGITS' "Classify One".

The picture, the top 5 classes with bars and names; beside them every layer in order, and for the
chosen one its activations as a mosaic (channels as tiles) and its weights, each with mean, std,
min, max and a histogram. Selecting a layer's box on the canvas shows that layer here. The model
is built from a copy of the net with the weights chosen (the last run's snapshot, the model
opened with the net, or the fillers'), off the GUI thread, as is every image (engine/model_use).
"""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QProgressBar,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.model_use import pictures, sources
from app.model_use.worker import Worker
from engine.model_use import classify, inputs
from engine.model_use.inspect import Inspection, LayerLook, inspect

TOP = 5
PICTURE = 224  # the longest side the input picture is shown at
IMAGE_FILTER = "Images (*.png *.jpg *.jpeg *.bmp *.gif *.tif *.tiff *.webp *.ppm *.pgm);;All files (*)"


class ClassifyDialog(QDialog):
    def __init__(self, window) -> None:
        super().__init__(window)
        self.window_ = window
        self.setWindowTitle("Classify Image")
        self.resize(1100, 700)
        self.worker = Worker(self)
        self.worker.done.connect(self._show)
        self.worker.failed.connect(self._failed)
        self.inspection: Inspection | None = None
        self.labels: list[str] | None = None
        self._model: tuple[tuple, classify.Model] | None = None  # (key, model): built once per net+weights

        self.weights = QComboBox()
        sources.fill_combo(self.weights, window)
        self.open_button = QPushButton("Image…")
        self.open_button.clicked.connect(self._ask_and_classify)
        self.labels_button = QPushButton("Labels…")
        self.labels_button.clicked.connect(self._ask_labels)
        self.status = QLabel("Choose an image.")
        bar = QHBoxLayout()
        for widget in (QLabel("Weights:"), self.weights, self.open_button, self.labels_button):
            bar.addWidget(widget)
        bar.addWidget(self.status, 1)

        self.picture = QLabel(alignment=Qt.AlignmentFlag.AlignCenter)
        self.picture.setMinimumSize(PICTURE, PICTURE)
        top = QGridLayout()
        self.top_names: list[QLabel] = []
        self.top_bars: list[QProgressBar] = []
        for row in range(TOP):
            name, bar_ = QLabel(""), QProgressBar()
            bar_.setRange(0, 1000)
            bar_.setTextVisible(True)
            top.addWidget(name, row, 0)
            top.addWidget(bar_, row, 1)
            self.top_names.append(name)
            self.top_bars.append(bar_)
        left = QVBoxLayout()
        left.addWidget(self.picture)
        left.addLayout(top)
        left.addStretch(1)
        left_widget = QWidget()
        left_widget.setLayout(left)

        self.layers = QListWidget()
        self.layers.currentRowChanged.connect(lambda _row: self._draw_layer())
        self.layer_title = QLabel("")
        self.activation_picture = QLabel(alignment=Qt.AlignmentFlag.AlignCenter)
        self.activation_stats = QLabel("")
        self.activation_hist = pictures.histogram_plot(self.palette())
        self.weights_picture = QLabel(alignment=Qt.AlignmentFlag.AlignCenter)
        self.weights_stats = QLabel("")
        self.weights_hist = pictures.histogram_plot(self.palette())
        detail = QVBoxLayout()
        detail.addWidget(self.layer_title)
        for caption, picture, stats, hist in (
            ("Activations", self.activation_picture, self.activation_stats, self.activation_hist),
            ("Weights", self.weights_picture, self.weights_stats, self.weights_hist),
        ):
            detail.addWidget(QLabel(f"<b>{caption}</b>"))
            picture.setMinimumHeight(150)
            detail.addWidget(picture, 1)
            detail.addWidget(stats)
            detail.addWidget(hist)
        detail_widget = QWidget()
        detail_widget.setLayout(detail)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left_widget)
        splitter.addWidget(self.layers)
        splitter.addWidget(detail_widget)
        splitter.setSizes([320, 200, 580])
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(splitter, 1)
        window.selection.changed.connect(self._follow_selection)
        self.finished.connect(lambda _result: self._disconnect())

    # ---- asking (tests replace these) --------------------------------------------------------
    def ask_image_path(self) -> str:
        return QFileDialog.getOpenFileName(self, "Classify Image", "", IMAGE_FILTER)[0]

    def ask_labels_path(self) -> str:
        return QFileDialog.getOpenFileName(
            self, "Class Names (one a line)", "", "Text (*.txt);;All files (*)"
        )[0]

    def _ask_and_classify(self) -> None:
        path = self.ask_image_path()
        if path:
            self.classify(path)

    def _ask_labels(self) -> None:
        path = self.ask_labels_path()
        if path:
            self.set_labels(path)

    # ---- work --------------------------------------------------------------------------------
    def set_labels(self, path: str) -> None:
        try:
            self.labels = classify.read_labels(path)
        except Exception as exc:
            self.status.setText(str(exc))
            return
        if self.inspection is not None:
            self._show_top()

    def classify(self, path: str) -> None:
        """Classify the image at ``path`` (off the GUI thread); the answer shows when it is in."""
        net, net_path = sources.document_net(self.window_)
        weights = self.weights.currentData()
        key = (net.SerializeToString(deterministic=True), net_path, weights)
        cached = self._model

        def work(progress, cancelled):
            model = cached[1] if cached is not None and cached[0] == key else None
            if model is None:
                model = classify.open_classifier(net, weights, net_path=net_path)
            image = inputs.load(path, model.channels)
            return key, model, image, inspect(model, image)

        self.status.setText(f"Classifying {os.path.basename(path)}…")
        self.worker.start(work)

    def _show(self, answer) -> None:
        key, model, image, inspection = answer
        self._model = (key, model)
        self.image = image
        self.inspection = inspection
        pixmap = pictures.image_pixmap(image)
        self.picture.setPixmap(pixmap.scaled(PICTURE, PICTURE, Qt.AspectRatioMode.KeepAspectRatio))
        self._show_top()
        current = self.layers.currentItem().text().split(" ")[0] if self.layers.currentItem() else None
        self.layers.clear()
        for look in inspection.layers:
            self.layers.addItem(f"{look.name}  ({look.type})")
        names = [look.name for look in inspection.layers]
        self.layers.setCurrentRow(names.index(current) if current in names else 0)
        self.status.setText(f"{model.input_shape[1]}×{model.input_shape[2]}×{model.input_shape[3]} input")

    def _show_top(self) -> None:
        assert self.inspection is not None
        if self.labels is not None and len(self.labels) != len(self.inspection.probabilities):
            self.status.setText(
                f"the labels file names {len(self.labels)} classes but the model gives "
                f"{len(self.inspection.probabilities)}: showing indices"
            )
            self.labels = None
        for row, (name, bar) in enumerate(zip(self.top_names, self.top_bars)):
            best = self.inspection.top(TOP)
            if row < len(best):
                index, p = best[row]
                name.setText(self.labels[index] if self.labels else str(index))
                bar.setValue(round(p * 1000))
                bar.setFormat(f"{p * 100:.2f}%")
            else:
                name.setText("")
                bar.setValue(0)
                bar.setFormat("")

    def _failed(self, message: str) -> None:
        self.status.setText(message)

    # ---- a layer -----------------------------------------------------------------------------
    def current_layer(self) -> LayerLook | None:
        row = self.layers.currentRow()
        if self.inspection is None or not 0 <= row < len(self.inspection.layers):
            return None
        return self.inspection.layers[row]

    def show_layer(self, name: str) -> bool:
        if self.inspection is None:
            return False
        names = [look.name for look in self.inspection.layers]
        if name not in names:
            return False
        self.layers.setCurrentRow(names.index(name))
        return True

    def _draw_layer(self) -> None:
        look = self.current_layer()
        if look is None:
            return
        shape = "×".join(map(str, look.activation.shape))
        self.layer_title.setText(f"<b>{look.name}</b> ({look.type}): top '{look.top}' {shape}")
        self._put(self.activation_picture, pictures.array_pixmap(pictures.channels_mosaic(look.activation)))
        self.activation_stats.setText(look.activation_stats.text())
        pictures.draw_histogram(self.activation_hist, look.activation_stats)
        if look.weights:
            w = look.weights[0]
            picture = pictures.weights_mosaic(w)
            self._put(self.weights_picture, pictures.array_pixmap(picture, symmetric=True))
            self.weights_stats.setText(f"{'×'.join(map(str, w.shape))}: {look.weight_stats[0].text()}")
            pictures.draw_histogram(self.weights_hist, look.weight_stats[0])
        else:
            self.weights_picture.clear()
            self.weights_stats.setText("no weights")
            pictures.draw_histogram(self.weights_hist, None)

    def _put(self, label: QLabel, pixmap) -> None:
        size = label.size()
        width, height = max(size.width(), 150), max(size.height(), 150)
        label.setPixmap(pixmap.scaled(width, height, Qt.AspectRatioMode.KeepAspectRatio))

    def _follow_selection(self, indices: tuple[int, ...]) -> None:
        layers = self.window_.doc.net.layer
        if indices and indices[-1] < len(layers):
            self.show_layer(layers[indices[-1]].name)

    def _disconnect(self) -> None:
        self.worker.cancel()
        if self._follow_selection in self.window_.selection.changed._callbacks:
            self.window_.selection.changed.disconnect(self._follow_selection)
