"""Live curves: training loss (raw, faint, and smoothed), test outputs, and the learning rate.

pyqtgraph items are made once per shown run and fed with ``setData`` from a ~10 Hz timer, and
only when a run's ``version`` moved; they downsample (peak, about one min/max pair per pixel)
and clip to the view, so a 100,000-iteration run redraws as fast as a short one. The learning
rate has its own right-hand axis and is never smoothed. Test outputs named like a loss share the
loss plot; the others (accuracy, ...) get the plot below, linked in x.

Every millisecond the GUI thread spends drawing holds the GIL the training thread needs, so the
drawing is kept cheap: the ranges grow in round steps (``ranges``), so the axes and the grid,
cached as pixmaps, are rarely redrawn, and the redraw interval backs off from 100 ms when frames
cost more than ``BUDGET`` of the time between them.
"""

from __future__ import annotations

import math
import time

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer, Signal
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

from app.plot_palette import follow_palette
from app.training.ranges import RangeKeeper, nice_ceiling, nice_number, round_range, span
from app.training.run import Run
from app.training.series import Smoother

REFRESH_MS = 100  # the fastest redraw
SLOWEST_MS = 1000
BUDGET = 0.05  # at most this share of the GUI thread goes to drawing curves
X_COLUMNS = {"Iterations": "iter", "Wall time (s)": "seconds"}
# One run: a colour per quantity. Several: a colour per run, a line style per quantity.
TRAIN_COLOR, TEST_LOSS_COLOR, LR_COLOR = "#1f77b4", "#ff7f0e", "#8a8a8a"
METRIC_COLORS = ("#2ca02c", "#9467bd", "#17becf", "#8c564b")
LEFT_AXIS_W, RIGHT_AXIS_W = 52, 64  # equal in both plots, so their x positions line up


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


class _LossAxis(pg.AxisItem):
    """In log y, labels 1, 2 and 5 x 10^k only: pyqtgraph labels all of 1..9 over narrow ranges."""

    def logTickValues(self, minVal, maxVal, size, stdTicks):
        ticks = super().logTickValues(minVal, maxVal, size, stdTicks)
        values = sorted({v for _, level in ticks for v in level})
        labelled = [v for v in values if round(10 ** (v - math.floor(v + 1e-9)), 6) in (1, 2, 5)]
        return [(None, labelled), (None, [v for v in values if v not in labelled])]


class _TimedGraphics(pg.GraphicsLayoutWidget):
    """Remembers how long its last paint took, so the plots can pace themselves."""

    paint_s = 0.0

    def paintEvent(self, event) -> None:
        start = time.perf_counter()
        super().paintEvent(event)
        self.paint_s = time.perf_counter() - start


class RunCurves:
    """The pyqtgraph items of one shown run."""

    def __init__(self, plots: TrainingPlots, run: Run, overlay: bool) -> None:
        self.plots, self.run, self.overlay = plots, run, overlay
        self.version = -1
        self.smoother = Smoother(plots.smoothing.value())
        self.prefix = f"{run.name} " if overlay else ""
        base = run.color if overlay else TRAIN_COLOR
        self.raw = _curve(pen=_pen(base, 1, 70))
        self.smooth = _curve(
            pen=_pen(base, 2), name=f"{run.name} train loss" if overlay else "train loss (smoothed)"
        )
        lr_color = run.color if overlay else LR_COLOR
        lr_name = f"{run.name} lr" if overlay else "learning rate"
        self.lr = _curve(pen=_pen(lr_color, 1.2, 200, Qt.PenStyle.DashLine), name=lr_name)
        plots.loss_plot.addItem(self.raw)
        plots.loss_plot.addItem(self.smooth)
        plots.lr_view.addItem(self.lr)
        plots.legend.addItem(self.smooth, self.smooth.name())
        plots.legend.addItem(self.lr, self.lr.name())
        self.tests: dict[str, pg.PlotDataItem] = {}

    def test_item(self, name: str) -> pg.PlotDataItem:
        item = self.tests.get(name)
        if item is None:
            loss = is_loss(name)
            if self.overlay:
                color = self.run.color
            else:
                metrics = sum(not is_loss(n) for n in self.tests)
                color = TEST_LOSS_COLOR if loss else METRIC_COLORS[metrics % len(METRIC_COLORS)]
            style = Qt.PenStyle.DotLine if self.overlay and loss else Qt.PenStyle.SolidLine
            item = _curve(
                pen=_pen(color, 1.5, 255, style),
                symbol="o" if loss else "t",
                symbolSize=6,
                symbolBrush=QColor(color),
                symbolPen=None,
                name=f"{self.prefix}test {name}",
            )
            (self.plots.loss_plot if loss else self.plots.metric_plot).addItem(item)
            self.plots.legend.addItem(item, item.name())
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
            if item.getViewBox() is not None:
                item.getViewBox().removeItem(item)
        self.plots.lr_view.removeItem(self.lr)


class TrainingPlots(QWidget):
    export_csv_requested = Signal()
    export_png_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controls = self._make_controls()
        self.graphics = _TimedGraphics()
        self.graphics.setBackground("w")
        self.graphics.ci.setContentsMargins(4, 2, 4, 2)
        self.legend = pg.LegendItem(colCount=4, labelTextColor="#333", frame=False, horSpacing=14)
        self.legend.layout.setContentsMargins(8, 0, 8, 0)  # one tight line: the plots keep the height
        self.graphics.addItem(self.legend, row=0, col=0)
        self.loss_plot = self.graphics.addPlot(row=1, col=0, axisItems={"left": _LossAxis("left")})
        self.metric_plot = self.graphics.addPlot(row=2, col=0)
        self.graphics.ci.layout.setRowStretchFactor(1, 3)
        self.graphics.ci.layout.setRowStretchFactor(2, 2)
        self._style_plots()
        self._make_lr_axis()
        for plot in (self.loss_plot, self.metric_plot):  # short plots: fewer labels, none stacked
            plot.getAxis("left").setTickDensity(0.6)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.graphics, 1)

        self._shown: list[Run] = []
        self._curves: dict[int, RunCurves] = {}
        self._force = False
        self._frame_s = 0.0
        self._x = RangeKeeper(self.loss_plot.vb, 0)
        self._loss_y = RangeKeeper(self.loss_plot.vb, 1)
        self._metric_y = RangeKeeper(self.metric_plot.vb, 1)
        self._lr_y = RangeKeeper(self.lr_view, 1)
        self._follow()
        for plot in (self.loss_plot, self.metric_plot):
            plot.vb.sigRangeChangedManually.connect(self._stop_following)
        self.x_axis.currentTextChanged.connect(self._on_x_axis)
        self.smoothing.valueChanged.connect(self._invalidate)
        self.log_y.toggled.connect(self._on_log_y)
        self.timer = QTimer(self, interval=REFRESH_MS, timeout=self.refresh)
        self.timer.start()

    # ---- construction ------------------------------------------------------------------
    def _make_controls(self) -> QWidget:
        """x axis, smoothing, log y, export: a strip the dock shows beside its tabs."""
        self.x_axis = QComboBox()
        self.x_axis.addItems(list(X_COLUMNS))
        self.smoothing = QDoubleSpinBox(decimals=3, minimum=0.0, maximum=0.999, singleStep=0.05, value=0.9)
        self.smoothing.setToolTip("Weight of the debiased exponential moving average (0: no smoothing)")
        self.log_y = QCheckBox("Log y")
        export_csv = QToolButton(text="CSV…", autoRaise=True, toolTip="Export the shown runs' curves as CSV")
        export_png = QToolButton(text="PNG…", autoRaise=True, toolTip="Export the plot as a PNG image")
        export_csv.clicked.connect(self.export_csv_requested)
        export_png.clicked.connect(self.export_png_requested)
        strip = QWidget()
        row = QHBoxLayout(strip)
        row.setContentsMargins(4, 0, 4, 0)
        for widget in (QLabel("x"), self.x_axis, QLabel("Smoothing"), self.smoothing, self.log_y):
            row.addWidget(widget)
        row.addSpacing(8)
        row.addWidget(QLabel("Export"))
        row.addWidget(export_csv)
        row.addWidget(export_png)
        return strip

    def _style_plots(self) -> None:
        for plot in (self.loss_plot, self.metric_plot):
            # The plot imposes these on every item it is given: set them here, not per curve.
            plot.setDownsampling(auto=True, mode="peak")
            plot.setClipToView(True)
            plot.showGrid(x=True, y=True, alpha=0.15)
            plot.setMenuEnabled(False)
            plot.showAxis("right")
            for name in ("left", "bottom", "right"):
                axis = plot.getAxis(name)
                axis.setTextPen("#444")
                axis.setPen("#999")
                axis.enableAutoSIPrefix(False)  # 0.01, not "10 (x0.001)"
                axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)  # axes + grid: a pixmap
            plot.getAxis("left").setWidth(LEFT_AXIS_W)
            plot.getAxis("right").setWidth(RIGHT_AXIS_W)
        self.loss_plot.setLabel("left", "loss")
        self.loss_plot.getAxis("bottom").setStyle(showValues=False)
        self.metric_plot.setLabel("left", "test output")
        self.metric_plot.getAxis("right").setStyle(showValues=False)
        self.metric_plot.setXLink(self.loss_plot)
        self._set_x_label()
        self._follow_palette()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "metric_plot"):
            self._follow_palette()

    def _follow_palette(self) -> None:
        plots = (self.loss_plot, self.metric_plot)
        follow_palette(self.graphics, plots, self.palette(), self.legend)

    def _make_lr_axis(self) -> None:
        """The learning rate: a second view box on the loss plot's right axis, x linked."""
        self.lr_view = pg.ViewBox()
        self.loss_plot.scene().addItem(self.lr_view)
        self.loss_plot.getAxis("right").linkToView(self.lr_view)
        self.loss_plot.getAxis("right").setLabel("learning rate", color="#777")
        self.lr_view.setXLink(self.loss_plot)
        self.loss_plot.vb.sigResized.connect(self._sync_lr_view)

    def _sync_lr_view(self) -> None:
        self.lr_view.setGeometry(self.loss_plot.vb.sceneBoundingRect())
        self.lr_view.linkedViewChanged(self.loss_plot.vb, self.lr_view.XAxis)

    def _set_x_label(self) -> None:
        self.metric_plot.setLabel("bottom", self.x_axis.currentText().lower())

    # ---- which runs ---------------------------------------------------------------------
    def set_shown(self, runs: list[Run]) -> None:
        """Draw exactly ``runs`` (in this order); styles change when one run becomes several."""
        overlay = len(runs) > 1
        same = [r.number for r in runs] == [r.number for r in self._shown]
        if same and all(c.overlay == overlay for c in self._curves.values()):
            return
        for curves in self._curves.values():
            curves.remove()
        self.legend.clear()
        self._shown = list(runs)
        self._curves = {run.number: RunCurves(self, run, overlay) for run in runs}
        self._follow()
        self.refresh(force=True)

    @property
    def shown(self) -> list[Run]:
        return list(self._shown)

    # ---- ranges ----------------------------------------------------------------------------
    def _follow(self) -> None:
        """Round ranges that grow with the runs (the loss axis fits itself in log y)."""
        self.following = True
        self.loss_plot.enableAutoRange(x=False, y=self.log_y.isChecked())
        self.metric_plot.enableAutoRange(x=False, y=False)
        self.lr_view.enableAutoRange(y=False)
        for keeper in (self._x, self._loss_y, self._metric_y, self._lr_y):
            keeper.reset()

    def _stop_following(self, *args) -> None:
        self.following = False

    def _keep_ranges(self, x_column: str) -> None:
        if self.loss_plot.vb.autoRangeEnabled()[0]:  # pyqtgraph's "A" button, or log y toggled
            self._follow()
        if not self.following:
            return
        runs = [r for r in self._shown if len(r.train)]
        last = max((r.train.column(x_column)[-1] for r in runs), default=0.0) * 1.05
        if x_column == "iter":
            end = min(nice_ceiling(last + 1), max((r.max_iter for r in self._shown), default=0) or 10**9)
        else:
            end = nice_number(last) if last > 0 else 1.0
        self._x.keep(0.0, end, margin=0.015)
        tests = [(name, t.column("value")) for r in runs for name, t in r.tests.items()]
        if not self.log_y.isChecked():
            loss = span([r.train.column("loss") for r in runs] + [v for name, v in tests if is_loss(name)])
            if loss:
                self._loss_y.keep(*round_range(*loss))
        rate = span(r.train.column("lr") for r in runs)
        if rate:
            self._lr_y.keep(*round_range(*rate), margin=0.05)
        metric = span(v for name, v in tests if not is_loss(name))
        if metric:
            self._metric_y.keep(*((0.0, 1.0) if metric[0] >= 0 and metric[1] <= 1 else round_range(*metric)))

    # ---- redraw ---------------------------------------------------------------------------
    def _on_x_axis(self) -> None:
        self._set_x_label()
        self._invalidate()

    def _on_log_y(self, on: bool) -> None:
        self.loss_plot.setLogMode(y=on)
        self.loss_plot.getAxis("right").setLogMode(False, False)  # the learning rate stays linear
        self.loss_plot.getAxis("left").setStyle(maxTextLevel=0 if on else 2)  # label 1, 2, 5 x 10^k only
        self._follow()
        self.refresh(force=True)

    def _invalidate(self) -> None:
        self._force = True
        self._follow()
        self.refresh()

    def refresh(self, force: bool = False) -> None:
        if not self.isVisible() and not force:
            return
        start = time.perf_counter()
        force = force or self._force
        self._force = False
        x_column = X_COLUMNS[self.x_axis.currentText()]
        self._keep_ranges(x_column)
        for curves in self._curves.values():
            curves.update(x_column, self.smoothing.value(), force)
        self._pace(time.perf_counter() - start + self.graphics.paint_s)

    def _pace(self, frame_s: float) -> None:
        """Redraw every 100 ms, or less often when frames cost more than BUDGET of the interval."""
        self._frame_s = 0.8 * self._frame_s + 0.2 * frame_s  # one slow frame (an axis change) is no trend
        interval = int(min(SLOWEST_MS, max(REFRESH_MS, self._frame_s / BUDGET * 1000)))
        if abs(interval - self.timer.interval()) > 20:
            self.timer.setInterval(interval)

    # ---- for tests and export ----------------------------------------------------------------
    def curve(self, run: Run, which: str = "smooth") -> tuple:
        """The (x, y) fed to a run's ``raw`` / ``smooth`` / ``lr`` curve or test output (not downsampled)."""
        curves = self._curves.get(run.number)
        if curves is None:
            return (None, None)
        item = curves.tests.get(which) or getattr(curves, which)
        return item.getOriginalDataset()
