"""Live curves: training loss (raw, faint, and smoothed), test outputs, and the learning rate.

pyqtgraph items are made once per shown run and fed with ``setData`` from a ~10 Hz timer, and
only when a run's ``version`` moved; they downsample (peak) and clip to the view, so a
100,000-iteration run redraws as fast as a short one. The learning rate has its own right-hand
axis and is never smoothed. Test outputs named like a loss share the loss plot; the others
(accuracy, ...) get the plot below, linked in x.

Every millisecond the GUI thread spends drawing holds the GIL the training thread needs, so the
drawing is kept cheap: the x range grows in 1-2-5 steps instead of with every point (the axes
and grid, cached as pixmaps, are then rarely redrawn), and the redraw interval backs off from
100 ms when one frame costs more than ``BUDGET`` of the time between frames.
"""

from __future__ import annotations

import math
import time

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGraphicsItem,
    QHBoxLayout,
    QLabel,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.training.run import Run
from app.training.series import Smoother

REFRESH_MS = 100  # the fastest redraw
SLOWEST_MS = 1000
BUDGET = 0.05  # at most this share of the GUI thread goes to drawing curves
X_COLUMNS = {"Iterations": "iter", "Wall time (s)": "seconds"}
# One run: a colour per quantity. Several: a colour per run, a line style per quantity.
QUANTITY_COLORS = {"train": "#1f77b4", "test loss": "#ff7f0e", "lr": "#8a8a8a", "metric": "#2ca02c"}
METRIC_COLORS = ("#2ca02c", "#9467bd", "#17becf", "#8c564b")


def _pen(color: str, width: float = 1.5, alpha: int = 255, style=Qt.PenStyle.SolidLine):
    c = QColor(color)
    c.setAlpha(alpha)
    return pg.mkPen(c, width=width, style=style)


def _curve(**kwargs) -> pg.PlotDataItem:
    item = pg.PlotDataItem(**kwargs)
    item.setDownsampling(auto=True, method="peak")
    item.setClipToView(True)
    item.opts["autoDownsampleFactor"] = 1.0  # one min/max pair per pixel column is all a screen shows
    return item


def is_loss(name: str) -> bool:
    return "loss" in name.lower()


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 x 10^k that is >= ``value`` (10 at least)."""
    if value <= 10:
        return 10.0
    power = 10 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= value)


class _TimedGraphics(pg.GraphicsLayoutWidget):
    """Remembers how long its last paint took, so the plots can pace themselves."""

    paint_s = 0.0

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        start = time.perf_counter()
        super().paintEvent(event)
        self.paint_s = time.perf_counter() - start


class RunCurves:
    """The pyqtgraph items of one shown run."""

    def __init__(self, plots: TrainingPlots, run: Run, overlay: bool) -> None:
        self.plots, self.run, self.overlay = plots, run, overlay
        self.version = -1
        self.smoother = Smoother(plots.smoothing.value())
        base = run.color if overlay else QUANTITY_COLORS["train"]
        prefix = f"{run.name} " if overlay else ""
        self.raw = _curve(pen=_pen(base, 1, 70))
        self.smooth = _curve(pen=_pen(base, 2), name=f"{prefix}train loss (smoothed)")
        lr_color = run.color if overlay else QUANTITY_COLORS["lr"]
        self.lr = _curve(pen=_pen(lr_color, 1.2, 200, Qt.PenStyle.DashLine), name=f"{prefix}learning rate")
        plots.loss_plot.addItem(self.raw)
        plots.loss_plot.addItem(self.smooth)
        plots.lr_view.addItem(self.lr)
        self.tests: dict[str, pg.PlotDataItem] = {}

    def test_item(self, name: str) -> pg.PlotDataItem:
        item = self.tests.get(name)
        if item is None:
            loss = is_loss(name)
            if self.overlay:
                color = self.run.color
            else:
                metrics = sum(not is_loss(n) for n in self.tests)
                color = QUANTITY_COLORS["test loss"] if loss else METRIC_COLORS[metrics % len(METRIC_COLORS)]
            prefix = f"{self.run.name} " if self.overlay else ""
            style = Qt.PenStyle.DashLine if self.overlay and loss else Qt.PenStyle.SolidLine
            item = _curve(
                pen=_pen(color, 1.5, 255, style),
                symbol="o" if loss else "t",
                symbolSize=6,
                symbolBrush=QColor(color),
                symbolPen=None,
                name=f"{prefix}test {name}",
            )
            (self.plots.loss_plot if loss else self.plots.metric_plot).addItem(item)
            self.tests[name] = item
        return item

    def update(self, x_column: str, smoothing: float, force: bool) -> None:
        run = self.run
        if self.version == run.version and not force:
            return
        self.version = run.version
        self.smoother.set_weight(smoothing)
        train = run.train
        x = train.column(x_column)
        loss = train.column("loss")
        self.raw.setData(x, loss)
        self.smooth.setData(x, self.smoother.update(loss))
        self.lr.setData(x, train.column("lr"))
        for name, series in run.tests.items():
            self.test_item(name).setData(series.column(x_column), series.column("value"))

    def remove(self) -> None:
        for item in (self.raw, self.smooth, *self.tests.values()):
            item.getViewBox() and item.getViewBox().removeItem(item)
        self.plots.lr_view.removeItem(self.lr)


class TrainingPlots(QWidget):
    export_csv_requested = Signal()
    export_png_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        pg.setConfigOptions(antialias=True)
        self.x_axis = QComboBox()
        self.x_axis.addItems(list(X_COLUMNS))
        self.smoothing = QDoubleSpinBox(decimals=3, minimum=0.0, maximum=0.999, singleStep=0.05, value=0.9)
        self.smoothing.setToolTip("Weight of the debiased exponential moving average (0: no smoothing)")
        self.log_y = QCheckBox("Log y")
        export_csv = QToolButton(text="Export CSV…", autoRaise=True)
        export_png = QToolButton(text="Export PNG…", autoRaise=True)
        export_csv.clicked.connect(self.export_csv_requested)
        export_png.clicked.connect(self.export_png_requested)
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 0)
        for widget in (QLabel("x:"), self.x_axis, QLabel("Smoothing:"), self.smoothing, self.log_y):
            bar.addWidget(widget)
        bar.addStretch(1)
        bar.addWidget(export_csv)
        bar.addWidget(export_png)

        self.graphics = _TimedGraphics()
        self.graphics.setBackground("w")
        self.loss_plot = self.graphics.addPlot(row=0, col=0)
        self.metric_plot = self.graphics.addPlot(row=1, col=0)
        self.graphics.ci.layout.setRowStretchFactor(0, 3)
        self.graphics.ci.layout.setRowStretchFactor(1, 2)
        self._style_plots()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(bar)
        layout.addWidget(self.graphics, 1)

        self._shown: list[Run] = []
        self._curves: dict[int, RunCurves] = {}
        self._force = False
        self.x_axis.currentTextChanged.connect(self._on_x_axis)
        self.smoothing.valueChanged.connect(self._invalidate)
        self.log_y.toggled.connect(lambda on: self.loss_plot.setLogMode(y=on))
        self.timer = QTimer(self, interval=REFRESH_MS, timeout=self.refresh)
        self.timer.start()

    def _style_plots(self) -> None:
        for plot in (self.loss_plot, self.metric_plot):
            # The plot imposes these on every item it is given: set them here, not per curve.
            plot.setDownsampling(auto=True, mode="peak")
            plot.setClipToView(True)
            plot.showGrid(x=True, y=True, alpha=0.15)
            plot.setMenuEnabled(False)
            for name in ("left", "bottom", "right"):
                axis = plot.getAxis(name)
                axis.setTextPen("#444")
                axis.setPen("#999")
                axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)  # axes + grid: a pixmap
                axis.enableAutoSIPrefix(False)  # 0.01, not "10 (x0.001)"
        self.loss_plot.setLabel("left", "loss")
        self.metric_plot.setLabel("left", "test output")
        legend = {"offset": (-6, 4), "colCount": 3, "labelTextColor": "#333", "brush": (255, 255, 255, 210)}
        self.loss_legend = self.loss_plot.addLegend(**legend)
        self.metric_plot.addLegend(**legend)
        self.metric_plot.setXLink(self.loss_plot)
        self._set_x_label()
        # The learning rate: a second view box on the loss plot's right axis, x linked.
        self.lr_view = pg.ViewBox()
        self.loss_plot.showAxis("right")
        self.loss_plot.scene().addItem(self.lr_view)
        self.loss_plot.getAxis("right").linkToView(self.lr_view)
        self.loss_plot.getAxis("right").setLabel("learning rate", color="#777")
        self.lr_view.setXLink(self.loss_plot)
        self.loss_plot.vb.sigResized.connect(self._sync_lr_view)
        # x follows the runs in steps until the user pans or zooms; pyqtgraph's "A" button resumes.
        self.loss_plot.enableAutoRange(x=False)
        self.metric_plot.enableAutoRange(x=False)
        self._x_max = 0.0
        self.follow_x = True
        for plot in (self.loss_plot, self.metric_plot):
            plot.vb.sigRangeChangedManually.connect(self._stop_following)

    def _stop_following(self, *args) -> None:
        self.follow_x = False

    def _follow_x(self, x_column: str) -> None:
        vb = self.loss_plot.vb
        if vb.autoRangeEnabled()[0]:  # the "A" button: back to following
            vb.enableAutoRange(x=False)
            self.follow_x, self._x_max = True, 0.0
        if not self.follow_x:
            return
        last = [r.train.column(x_column)[-1] for r in self._shown if len(r.train)]
        target = nice_ceiling(max(last, default=0.0) * 1.1 + 1)
        if x_column == "iter":
            target = min(target, max((r.max_iter for r in self._shown), default=target) or target)
        if target != self._x_max:
            self._x_max = target
            vb.setXRange(0, target, padding=0.01)

    def _sync_lr_view(self) -> None:
        self.lr_view.setGeometry(self.loss_plot.vb.sceneBoundingRect())
        self.lr_view.linkedViewChanged(self.loss_plot.vb, self.lr_view.XAxis)

    def _set_x_label(self) -> None:
        self.metric_plot.setLabel("bottom", self.x_axis.currentText().lower())

    # ---- which runs ---------------------------------------------------------------------
    def set_shown(self, runs: list[Run]) -> None:
        """Draw exactly ``runs`` (in this order); styles change when one run becomes several."""
        overlay = len(runs) > 1
        if [r.number for r in runs] == [r.number for r in self._shown] and all(
            c.overlay == overlay for c in self._curves.values()
        ):
            return
        for curves in self._curves.values():
            curves.remove()
        self._curves = {run.number: RunCurves(self, run, overlay) for run in runs}
        self._shown = list(runs)
        self.follow_x, self._x_max = True, 0.0
        self._rebuild_legends()
        self.refresh(force=True)

    @property
    def shown(self) -> list[Run]:
        return list(self._shown)

    def _rebuild_legends(self) -> None:
        for plot in (self.loss_plot, self.metric_plot):
            plot.legend.clear()
        for curves in self._curves.values():
            self.loss_legend.addItem(curves.smooth, curves.smooth.name())
            self.loss_legend.addItem(curves.lr, curves.lr.name())

    # ---- redraw ---------------------------------------------------------------------------
    def _on_x_axis(self) -> None:
        self._set_x_label()
        self._invalidate()

    def _invalidate(self) -> None:
        self._force = True
        self._x_max = 0.0
        self.refresh()

    def refresh(self, force: bool = False) -> None:
        if not self.isVisible() and not force:
            return
        start = time.perf_counter()
        force = force or self._force
        self._force = False
        x_column = X_COLUMNS[self.x_axis.currentText()]
        self._follow_x(x_column)
        for curves in self._curves.values():
            curves.update(x_column, self.smoothing.value(), force)  # a new named item joins its legend
        self._pace(time.perf_counter() - start + self.graphics.paint_s)

    def _pace(self, frame_s: float) -> None:
        """Redraw every 100 ms, or less often when a frame costs more than BUDGET of the interval."""
        interval = int(min(SLOWEST_MS, max(REFRESH_MS, frame_s / BUDGET * 1000)))
        if abs(interval - self.timer.interval()) > 20:
            self.timer.setInterval(interval)

    def point_count(self, run: Run) -> int:
        """How many training points the smoothed curve of ``run`` holds (for tests)."""
        curves = self._curves.get(run.number)
        if curves is None:
            return 0
        y = curves.smooth.getData()[1]
        return 0 if y is None else len(y)
