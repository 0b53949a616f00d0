"""How the net starts: two initialisations side by side, one batch forward and backward each.

Per layer, in forward order: the std and the mean of the layer's output and the norm of the
gradient reaching it, for initialisation A (blue) and B (orange), so a signal that vanishes or
explodes through depth shows as a falling or climbing line. Runs off the GUI thread whenever the
panel is on screen and the net, the phase, the seed or a choice changes.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetricsF, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app import trust
from app.document import NET_KINDS, Change, Document, Kind
from app.fillers.jobs import Jobs
from app.fillers.netstart import CHOICES, Probe, probe, verdict
from app.plot_palette import follow_palette
from engine import pymodules
from proto import caffe_pb2

COLOURS = ("#3b6fb6", "#e07b00")
MAX_NAMES = 8  # layer names under an axis
PLOTS = (  # short axis titles: a plot may be only a few lines tall (the intro says what they mean)
    ("act_std", "std", True),
    ("act_mean", "mean", False),
    ("grad_norm", "‖grad‖", True),
)


class LayerAxis(pg.AxisItem):
    """Layer names under the ticks, as many as fit."""

    def __init__(self) -> None:
        super().__init__("bottom")
        self.names: list[str] = []

    def _metrics(self) -> QFontMetricsF:
        return QFontMetricsF(self.style.get("tickFont") or self.font())

    def tickValues(self, minVal, maxVal, size):
        n = len(self.names)
        span = maxVal - minVal
        if not n or not (math.isfinite(span) and span > 0 and size > 0):
            return []
        room = self._metrics().horizontalAdvance(max(self.names, key=len)) + 16  # a name and a gap
        # Spaced by the range shown, not by the number of layers: zoomed out, names never overlap.
        per_layer = size / span  # pixels between two neighbouring layers
        step = max(1, math.ceil(room / per_layer), math.ceil(min(n, span + 1) / MAX_NAMES))
        return [(step, [k for k in range(0, n, step) if minVal <= k <= maxVal])]

    def tickStrings(self, values, scale, spacing):
        return [self.names[int(v)] if 0 <= int(v) < len(self.names) else "" for v in values]


class LogAxis(pg.AxisItem):
    """A log axis labelled at 1, 2, 5 × 10^k (or at powers of ten over many decades): no crowding."""

    def __init__(self) -> None:
        super().__init__("left")

    def tickValues(self, minVal, maxVal, size):  # the view range: log10 of the values
        if not (math.isfinite(minVal) and math.isfinite(maxVal)) or maxVal <= minVal:
            return []
        low, high = math.floor(minVal), math.ceil(maxVal)
        if high - low > 3:
            step = math.ceil((high - low) / 5)
            return [(step, [k for k in range(low, high + 1, step) if minVal <= k <= maxVal])]
        marks = [k + math.log10(m) for k in range(low, high + 1) for m in (1, 2, 5)]
        return [(1, [v for v in marks if minVal <= v <= maxVal])]

    def tickStrings(self, values, scale, spacing):
        return [f"{10**v:.3g}" if -3 <= v <= 4 else f"1e{round(v)}" for v in values]


class NetStartPanel(QWidget):
    finished = Signal()  # the plots show the newest run

    def __init__(
        self,
        doc: Document,
        parent: QWidget | None = None,
        assumed: Callable[[int], Mapping[str, Sequence[tuple[int, ...]]]] | None = None,
        facts: Callable[[int], set[str]] | None = None,
    ) -> None:
        """``assumed(phase)``: data layer name -> the top shapes the canvas assumes for it (its
        source is not here); those layers get synthetic batches of that shape."""
        super().__init__(parent)
        self.setObjectName("netStartPanel")
        self.doc = doc
        self._assumed = assumed
        self._facts = facts  # the bundled MNIST's layers among them: said so, not "not here"
        self._inputs: Mapping[str, Sequence[tuple[int, ...]]] = {}
        self.phase, self.seed = caffe_pb2.TRAIN, 1
        self.results: tuple[Probe, Probe] | None = None
        self._pending = True
        self.jobs = Jobs(self)
        self.jobs.done.connect(self._show)
        self.jobs.failed.connect(lambda m: self.summary.setText(f"Could not run the net: {m}"))
        self.jobs.busy_changed.connect(lambda busy: self.busy.setVisible(busy))
        self._timer = QTimer(self, singleShot=True, interval=300)
        self._timer.timeout.connect(self._run)
        self._make_widgets()
        doc.changed.connect(self._on_doc)
        guard = trust.guard_of(doc)
        if guard is not None:
            guard.changed.connect(self._schedule)  # a folder trusted or taken back: run again

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "plots"):
            follow_palette(self.view, self.plots, self.palette())
            if self.results is not None:  # the verdict's warning colour is written into its HTML
                self.summary.setText(self._summary_html(self.results))

    def _make_widgets(self) -> None:
        # One line (the plots need the column's height); the whole explanation on hover.
        intro = QLabel("One batch through the fresh net: each layer's output and gradient", self)
        intro.setToolTip(
            "One batch forward and backward through the freshly initialised net: per layer, the std and "
            "the mean of its output and the norm of the gradient reaching it. Lines that fall or climb "
            "steeply from layer to layer mean a signal that vanishes or explodes before training starts."
        )
        intro.setWordWrap(True)
        intro.setObjectName("netStartIntro")  # colours: the application theme (app.themes)
        self.choices = []
        controls = QHBoxLayout()
        for k, default in enumerate(("the net's own fillers", "msra everywhere")):
            combo = QComboBox(self)
            combo.addItems(list(CHOICES))
            combo.setCurrentText(default)
            combo.setMinimumWidth(100)  # long choices elide: the dock may be narrow
            combo.setStyleSheet(f"QComboBox {{ border-left: 4px solid {COLOURS[k]}; padding-left: 4px; }}")
            combo.currentIndexChanged.connect(self._schedule)
            self.choices.append(combo)
        self.phase_combo = QComboBox(self)
        self.phase_combo.addItems(["TRAIN", "TEST"])
        self.phase_combo.currentIndexChanged.connect(self._set_phase)
        self.seed_spin = QSpinBox(self)
        self.seed_spin.setRange(0, 2**31 - 1)
        self.seed_spin.setValue(self.seed)
        self.seed_spin.setPrefix("seed ")
        self.seed_spin.setMinimumWidth(96)
        self.seed_spin.valueChanged.connect(self._set_seed)
        self.reseed = QPushButton("Reseed", self)
        self.reseed.clicked.connect(lambda: self.seed_spin.setValue(self.seed + 1))
        controls.addWidget(QLabel("A", self))
        controls.addWidget(self.choices[0], 1)
        controls.addWidget(QLabel("B", self))
        controls.addWidget(self.choices[1], 1)
        second = QHBoxLayout()
        self.source = QLabel(self)
        self.source.setWordWrap(True)
        self.source.setObjectName("netStartSource")
        self.busy = QLabel("running…", self)
        self.busy.setObjectName("busyLabel")
        self.busy.hide()
        second.addWidget(self.phase_combo)
        second.addWidget(self.seed_spin)
        second.addWidget(self.reseed)
        second.addWidget(self.busy)
        second.addStretch(1)

        self.view = pg.GraphicsLayoutWidget(self)
        # The wheel scrolls the panel; a chart zooms under it only once clicked (focused).
        self.view.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.view.viewport().installEventFilter(self)
        self.view.setMinimumHeight(70 * len(PLOTS))  # each plot keeps room for its axis label
        self.view.setBackground("w")
        self.axes: list[LayerAxis] = []
        self.plots: list[pg.PlotItem] = []
        self.curves: dict[str, list[pg.PlotDataItem]] = {}
        first = None
        for row, (key, label, log) in enumerate(PLOTS):
            axis = LayerAxis()
            axes = {"bottom": axis, "left": LogAxis()} if log else {"bottom": axis}
            plot = self.view.addPlot(row=row, col=0, axisItems=axes)
            plot.setLabel("left", label)
            plot.getAxis("left").enableAutoSIPrefix(False)
            plot.showGrid(x=True, y=True, alpha=0.15)
            plot.setLogMode(y=log)
            plot.setMenuEnabled(False)
            plot.hideButtons()
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            if row < len(PLOTS) - 1:  # the layer names once, under the last plot: the plots keep height
                axis.setStyle(showValues=False)
            self.axes.append(axis)
            self.plots.append(plot)
            self.curves[key] = [
                plot.plot(
                    pen=pg.mkPen(c, width=2),
                    symbol="o",
                    symbolSize=5,
                    symbolBrush=c,
                    symbolPen=None,
                    connect="finite",
                )
                for c in COLOURS
            ]
        follow_palette(self.view, self.plots, self.palette())
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)

        # In a scroll area: a short dock scrolls rather than squeezing the plots under the texts.
        body = QWidget(self)
        body.setObjectName("netStartBody")
        scroll = self.scroll_area = QScrollArea(self)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.addWidget(intro)
        layout.addLayout(controls)
        layout.addLayout(second)
        layout.addWidget(self.source)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.summary)
        scroll.setWidget(body)
        body.setAutoFillBackground(False)
        scroll.viewport().setAutoFillBackground(False)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Wheel and not self.view.hasFocus():
            QApplication.sendEvent(self.scroll_area.verticalScrollBar(), event)
            return True  # not the chart's: it would zoom
        return super().eventFilter(watched, event)

    # ---- when to run --------------------------------------------------------------------------
    def _on_doc(self, change: Change) -> None:
        if change.kind == Kind.NET_LOADED:
            self._forget()  # another net: the last one's curves and verdicts say nothing of it
        if change.kind in NET_KINDS:
            self._schedule()

    def _forget(self) -> None:
        self.results = None
        for curves in self.curves.values():
            for curve in curves:
                curve.setData([], [])
        self.source.setText("")
        self.summary.setText(f"Running {html.escape(self.doc.net.name or 'the net')}…")

    def check_assumed(self) -> None:
        """The canvas was rebuilt: run again if the shapes it assumes changed (the data appeared)."""
        if not self.on_screen():
            self._pending = True  # looked at when it is shown
        elif self._assumed is not None and self._assumed(self.phase) != self._inputs:
            self._schedule()

    def on_screen(self) -> bool:
        """Shown, and not a tab behind another: Qt keeps a tabified dock's panel "visible", moved out
        of sight, so a probe there (GoogLeNet: seconds of CPU) would run for nobody."""
        return self.isVisible() and not self.visibleRegion().isEmpty()

    def shown(self) -> None:
        """Its dock came to the front (its tab chosen): run what changed meanwhile."""
        if self._pending:
            self._timer.start()

    def _set_phase(self, i: int) -> None:
        self.phase = caffe_pb2.TRAIN if i == 0 else caffe_pb2.TEST
        self._schedule()

    def _set_seed(self, seed: int) -> None:
        self.seed = seed
        self._schedule()

    def tab_shown(self, visible: bool) -> None:
        if visible:
            self.shown()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.shown()

    def _schedule(self, *_args) -> None:
        self.jobs.cancel()  # a run still going answers for a net or a choice that is gone
        self._pending = True
        self._timer.start()  # _run looks whether the panel is on screen

    def _run(self) -> None:
        if not self.on_screen():
            return  # still pending: run when shown
        self._pending = False
        net = caffe_pb2.NetParameter()
        net.CopyFrom(self.doc.net)
        phase, seed = self.phase, self.seed
        labels = [combo.currentText() for combo in self.choices]
        where = pymodules.folders(self.doc.net_path, self.doc.solver_path)
        guard = trust.guard_of(self.doc)
        if guard is not None:
            guard.ensure(ask_again=False)  # untrusted: its Python layers say "not run" meanwhile
        inputs = self._inputs = dict(self._assumed(phase)) if self._assumed is not None else {}
        known = frozenset(self._facts(phase)) if self._facts is not None and inputs else frozenset()
        self.jobs.submit(
            lambda: tuple(probe(net, phase, seed, label, where, inputs, known) for label in labels)
        )

    # ---- drawing ------------------------------------------------------------------------------
    def _show(self, results: tuple[Probe, Probe]) -> None:
        self.results = results
        names = next((r.names for r in results if r.error is None), [])
        for axis in self.axes:
            axis.names = names
            axis.picture = None  # pyqtgraph caches the drawn ticks
            axis.update()
        for key, _label, log in PLOTS:
            for curve, result in zip(self.curves[key], results):
                values = np.array(getattr(result, key) if result.error is None else [], float)
                if log:
                    values[values <= 0] = np.nan
                curve.setData(np.arange(len(values)), values)
        for plot in self.plots:
            plot.enableAutoRange()
        first = next((r for r in results if r.error is None), None)
        self.source.setText(f"Input: {first.source}" if first else "")
        self.summary.setText(self._summary_html(results))
        self.finished.emit()

    def _summary_html(self, results: tuple[Probe, Probe]) -> str:
        alarm = self.palette().color(QPalette.ColorRole.BrightText).name()  # the theme's danger colour
        lines = []
        for k, result in enumerate(results):
            text = f"could not run: {result.error}" if result.error else verdict(result)
            for word in ("vanishes", "explodes"):
                text = text.replace(word, f"<b style='color:{alarm}'>{word}</b>")
            lines.append(f"<span style='color:{COLOURS[k]}'>■</span> <b>{result.label}</b>: {text}")
        return "<br>".join(lines)
