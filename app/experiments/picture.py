"""An experiment's curves as a PNG, as the Compare Initialisations window draws them, without a
window (``main.py compare-init --out curves.png``): the overlaid loss and test accuracy, the first
ReLU layer's statistics (or the layer asked for) and the verdict lines, at 1280x800."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.experiments.curves_view import CurvesView, verdict_line
from engine.experiments.compare_init import CompareInit
from proto.atomic import atomic_file

SIZE = (1280, 800)


def save_png(experiment: CompareInit, layers: Sequence[str], relu: Sequence[bool], path: str) -> None:
    page = QWidget()
    view = CurvesView(page)
    view.show_experiment(experiment)
    view.set_layers(tuple(layers), tuple(relu))
    verdicts = QLabel(page)
    verdicts.setTextFormat(Qt.TextFormat.RichText)
    verdicts.setText(
        "<br>".join(
            verdict_line(k, curves, curves.verdict.text if curves.verdict else "")
            for k, curves in enumerate(experiment.curves)
        )
    )
    column = QVBoxLayout(page)
    column.addWidget(view, 1)
    column.addWidget(verdicts)
    page.resize(*SIZE)
    page.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
    page.show()  # laid out and painted off screen
    view.refresh()
    picture = page.grab()
    page.close()
    with atomic_file(path) as tmp:
        if not picture.save(tmp, "PNG"):
            raise OSError(f"cannot write {path}")
