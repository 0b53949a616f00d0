"""The experiment's curves: every variant's loss and test accuracy overlaid (one colour each, a legend
naming the filler), and for the chosen layer, over the iterations, the std of its activations, the
norm of the gradient reaching it and the fraction of its ReLU outputs at zero.

The curves are read from what the experiment records (``CompareInit.curves``), on a 10 Hz timer
while it runs: the worker's lists only grow, so a read takes the length each list has then.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QTimer
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from app.plot_palette import follow_palette
from engine.experiments.compare_init import CompareInit, Curves
from engine.experiments.filler_spec import PRESETS

COLOURS = ("#3b6fb6", "#e07b00", "#2a9d4a", "#c0392b", "#8e44ad", "#8c6d1f")
STATS = (  # (Curves attribute, plot title, log y)
    ("act_std", "activation std", True),
    ("grad_norm", "‖gradient‖", True),
    ("dead", "dead ReLU fraction", False),
)


def verdict_line(k: int, curves: Curves, text: str) -> str:
    """Variant ``k``'s verdict as rich text: its colour, its name, the verdict."""
    name = html.escape(legend_name(curves))
    return f'<span style="color:{COLOURS[k % len(COLOURS)]}">■</span> <b>{name}</b>: {html.escape(text)}'


def legend_name(curves: Curves) -> str:
    """A preset's label, or the variant's name and its filler where the name does not say it."""
    return curves.name if curves.name in (curves.spec, *PRESETS) else f"{curves.name}: {curves.spec}"


class CurvesView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.experiment: CompareInit | None = None
        self.layer_combo = QComboBox(self)
        self.layer_combo.setToolTip("The layer whose activations, gradient and dead ReLUs are drawn")
        self.layer_combo.currentIndexChanged.connect(lambda _i: self.refresh())
        self.view = pg.GraphicsLayoutWidget(self)
        top, bottom = self.view.addLayout(row=0, col=0), self.view.addLayout(row=1, col=0)
        self.loss_plot = top.addPlot(row=0, col=0, title="loss (smoothed, log scale)")
        self.loss_plot.setLogMode(y=True)  # 87 (a saturated softmax) and 0.05 on one axis
        self.accuracy_plot = top.addPlot(row=0, col=1, title="test accuracy")
        self.legend = self.loss_plot.addLegend(offset=(-4, 4))
        self.stat_plots = {}
        for i, (key, title, log) in enumerate(STATS):
            plot = bottom.addPlot(row=0, col=i, title=title)
            plot.setLogMode(y=log)
            self.stat_plots[key] = plot
        self.plots = [self.loss_plot, self.accuracy_plot, *self.stat_plots.values()]
        for plot in self.plots:
            plot.showGrid(x=True, y=True, alpha=0.15)
            plot.setLabel("bottom", "iteration")
        self.loss_items: list[pg.PlotDataItem] = []
        self.accuracy_items: list[pg.PlotDataItem] = []
        self.stat_items: dict[str, list[pg.PlotDataItem]] = {key: [] for key, _, _ in STATS}
        layer_line = QHBoxLayout()
        layer_line.addWidget(QLabel("Per layer:", self))
        layer_line.addWidget(self.layer_combo, 1)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.view, 1)
        column.addLayout(layer_line)
        self.timer = QTimer(self, interval=100)
        self.timer.timeout.connect(self.refresh)
        follow_palette(self.view, self.plots, self.palette(), self.legend)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            follow_palette(self.view, self.plots, self.palette(), self.legend)

    def show_experiment(self, experiment: CompareInit) -> None:
        """Curves for ``experiment``'s variants, empty until it records; forget the last one's."""
        self.experiment = experiment
        self.legend.clear()
        for plot in self.plots:
            plot.clear()
        self.layer_combo.clear()
        self.loss_items, self.accuracy_items = [], []
        self.stat_items = {key: [] for key, _, _ in STATS}
        for k, curves in enumerate(experiment.curves):
            pen = pg.mkPen(COLOURS[k % len(COLOURS)], width=2)
            self.loss_items.append(self.loss_plot.plot(pen=pen, name=legend_name(curves)))
            dots = {"symbol": "o", "symbolSize": 5, "symbolBrush": COLOURS[k % len(COLOURS)]}
            self.accuracy_items.append(self.accuracy_plot.plot(pen=pen, **dots))
            for key, _, _ in STATS:
                self.stat_items[key].append(self.stat_plots[key].plot(pen=pen, connect="finite"))
        follow_palette(self.view, self.plots, self.palette(), self.legend)

    def set_layers(self, names: tuple[str, ...], relu: tuple[bool, ...]) -> None:
        """The layers the statistics cover; the first ReLU layer is shown first (where nets die)."""
        self.layer_combo.blockSignals(True)
        self.layer_combo.clear()
        self.layer_combo.addItems(list(names))
        first_relu = next((i for i, r in enumerate(relu) if r), 0)
        self.layer_combo.setCurrentIndex(first_relu)
        self.layer_combo.blockSignals(False)
        self.refresh()

    def refresh(self) -> None:
        if self.experiment is None:
            return
        accuracy = self.experiment.accuracy
        layer = self.layer_combo.currentIndex()
        for k, curves in enumerate(self.experiment.curves):
            n = min(len(curves.iters), len(curves.smoothed))
            self.loss_items[k].setData(curves.iters[:n], curves.smoothed[:n])
            if accuracy is not None:
                points = curves.accuracy(accuracy[0])
                self.accuracy_items[k].setData([p[0] for p in points], [p[1] for p in points])
            if layer < 0:
                continue
            for key, _, log in STATS:
                rows = getattr(curves, key)
                m = min(len(curves.stat_iters), len(rows))
                y = np.array([row[layer] for row in rows[:m]], dtype=np.float64)
                if log:
                    y[~(y > 0)] = math.nan  # a zero (a dead net's gradient) has no logarithm: a gap
                self.stat_items[key][k].setData(np.array(curves.stat_iters[:m], dtype=np.float64), y)

    def points(self, k: int) -> int:
        """How many loss points variant ``k``'s curve shows."""
        data = self.loss_items[k].getData()[0] if k < len(self.loss_items) else None
        return 0 if data is None else len(data)
