"""The learning-rate schedule of a solver as a curve over 0..max_iter (pyqtgraph).

The curve is made once and fed with ``setData``. Up to ``EXACT_LIMIT`` iterations the rates come
from ``engine.solvers.lr_policy.schedule`` itself; beyond, ``sampled_schedule`` evaluates the same
``learning_rate`` at ~2,000 iterations, adding the iterations where a multistep schedule can
move, so it agrees with the full schedule at every point it draws.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from engine.errors import EngineError
from engine.solvers import lr_policy
from proto import caffe_pb2

EXACT_LIMIT = 20_000
SAMPLES = 2_000
FORMULAS = {
    "fixed": "lr = base_lr",
    "step": "lr = base_lr · gamma ^ floor(iter / stepsize)",
    "exp": "lr = base_lr · gamma ^ iter",
    "inv": "lr = base_lr · (1 + gamma · iter) ^ (−power)",
    "multistep": "lr = base_lr · gamma ^ (stepvalues passed)",
    "poly": "lr = base_lr · (1 − iter / max_iter) ^ power",
    "sigmoid": "lr = base_lr / (1 + exp(−gamma · (iter − stepsize)))",
}


def sampled_schedule(param: caffe_pb2.SolverParameter, iterations: int, samples: int = SAMPLES):
    """(iterations, rates) at about ``samples`` points of 0..iterations-1, in order."""
    if iterations <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    if iterations <= EXACT_LIMIT:
        return np.arange(iterations), np.asarray(lr_policy.schedule(param, iterations), dtype=float)
    points = set(np.linspace(0, iterations - 1, samples).astype(np.int64).tolist())
    if param.lr_policy == "multistep":
        # A multistep position moves only at a stepvalue, or at each of the next few iterations
        # while later stepvalues are already passed (one step per iteration, as Caffe does).
        for value in param.stepvalue:
            points.update(range(value, min(value + len(param.stepvalue) + 1, iterations)))
    if param.lr_policy in ("step",) and param.stepsize > 0:
        for start in range(0, iterations, param.stepsize):  # both sides of each drop
            if len(points) > 4 * samples:
                break
            points.update((max(start - 1, 0), start))
    its = np.array(sorted(p for p in points if 0 <= p < iterations), dtype=np.int64)
    rates, step = np.empty(len(its)), 0
    for i, it in enumerate(its.tolist()):
        rates[i], step = lr_policy.learning_rate(param, it, step)
    return its, rates


class LrPlot(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("Learning rate", self)
        self.title.setObjectName("solverPlotTitle")
        self.log = QCheckBox("log scale", self)
        self.log.toggled.connect(self._set_log)
        self.note = QLabel(self)
        self.note.setObjectName("solverPlotNote")
        self.note.setWordWrap(True)
        self.plot = pg.PlotWidget(self)
        self.plot.setMinimumHeight(100)  # the fields below keep most of a short column (#31 case 4)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.plot.setLabel("bottom", "iteration")
        left = self.plot.getAxis("left")
        left.enableAutoSIPrefix(False)
        left.setWidth(52)
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.plot.getPlotItem().getViewBox().setMouseEnabled(x=False, y=False)
        self.curve = self.plot.plot(
            [], [], pen=pg.mkPen("#2f6fde", width=2), fillLevel=0.0, fillBrush=pg.mkBrush(47, 111, 222, 40)
        )
        self.curve.setDownsampling(auto=True, method="peak")
        self.curve.setClipToView(True)
        top = QHBoxLayout()
        top.addWidget(self.title)
        top.addStretch(1)
        top.addWidget(self.log)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 4)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.note)
        self.iterations = np.zeros(0)
        self.rates = np.zeros(0)
        self._follow_palette()

    def show_solver(self, param: caffe_pb2.SolverParameter) -> None:
        policy = param.lr_policy or "fixed"
        try:
            its, rates = sampled_schedule(param, param.max_iter)
        except (EngineError, ZeroDivisionError, OverflowError, ValueError) as e:
            self.iterations, self.rates = np.zeros(0), np.zeros(0)
            self._feed()
            self._say(f"No schedule: {e}", error=True)
            return
        self.iterations, self.rates = its, rates
        self._feed()
        if not len(rates):
            self._say("Set max_iter to see the schedule.", error=False)
            return
        self.title.setText(f"Learning rate · {policy} · {rates[0]:.3g} → {rates[-1]:.3g}")
        self._say(f"{FORMULAS.get(policy, policy)}  over {param.max_iter:,} iterations", error=False)

    def _feed(self) -> None:
        rates = self.rates
        if self.log.isChecked():
            rates = np.where(rates > 0, rates, np.nan)
        self.curve.setFillLevel(None if self.log.isChecked() else 0.0)  # log(0) has no place on the axis
        self.curve.setData(self.iterations, rates, connect="finite")

    def _set_log(self, on: bool) -> None:
        self.plot.setLogMode(y=on)
        self._feed()

    def _say(self, text: str, error: bool) -> None:
        self.note.setText(text)
        if self.note.property("error") != error:
            self.note.setProperty("error", error)
            self.note.style().unpolish(self.note)
            self.note.style().polish(self.note)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._follow_palette()
        super().changeEvent(event)

    def _follow_palette(self) -> None:
        palette = self.palette()
        self.plot.setBackground(palette.base().color())
        pen = pg.mkPen(palette.placeholderText().color())
        for name in ("left", "bottom"):
            axis = self.plot.getAxis(name)
            axis.setPen(pen)
            axis.setTextPen(pen)
