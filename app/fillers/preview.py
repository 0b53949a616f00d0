"""The preview of one drawn blob: histogram with the filler's density, statistics, kernels, traps.

Items are made once and fed with ``setData`` (pyqtgraph's way); ``show_preview`` redraws them
from a ``summary.Preview`` computed off the GUI thread, ``show_message`` says why there is none.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.fillers.images import KernelImage
from app.fillers.summary import Preview
from app.plot_palette import follow_palette

DRAWN, THEORY = "#3b6fb6", "#e07b00"


def _number(x: float) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:.3g}"


class PreviewView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.current: Preview | None = None
        self.title = QLabel(self)
        self.title.setObjectName("previewTitle")
        self.title.setWordWrap(True)
        self.message = QLabel(self)
        self.message.setObjectName("previewMessage")
        self.message.setWordWrap(True)

        self.plot = pg.PlotWidget(self, background="w")
        self.plot.setMinimumHeight(190)
        self.plot.setMaximumHeight(240)
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        item = self.plot.getPlotItem()
        item.setLabel("bottom", "value")
        item.getAxis("bottom").enableAutoSIPrefix(False)
        item.getAxis("left").enableAutoSIPrefix(False)
        item.setLabel("left", "density")
        item.showGrid(x=True, y=True, alpha=0.15)
        self.bars = pg.PlotDataItem(
            stepMode="center", fillLevel=0, brush=pg.mkBrush(59, 111, 182, 90), pen=pg.mkPen(DRAWN, width=1)
        )
        self.curve = pg.PlotDataItem(pen=pg.mkPen(THEORY, width=2.5))
        self.spikes = pg.PlotDataItem(pen=pg.mkPen(THEORY, width=3), connect="pairs")
        self.spike_text = pg.TextItem(color=THEORY, anchor=(0, 0))
        for each in (self.bars, self.curve, self.spikes, self.spike_text):
            self.plot.addItem(each)
        follow_palette(self.plot, (item,), self.palette())
        self.legend = QLabel(self)
        self.legend.setObjectName("plotLegend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)

        self.stats = QLabel(self)
        self.stats.setObjectName("previewStats")
        self.stats.setTextFormat(Qt.TextFormat.RichText)
        self.stats.setWordWrap(True)
        self.warnings = QLabel(self)
        self.warnings.setObjectName("previewWarnings")
        self.warnings.setWordWrap(True)
        self.kernel_caption = QLabel(self)
        self.kernel_caption.setObjectName("kernelCaption")
        self.kernel_caption.setWordWrap(True)
        self.kernel = KernelImage(parent=self)
        self.kernel_legend = QLabel(self)
        self.kernel_legend.setObjectName("kernelLegend")
        self.kernel_legend.setTextFormat(Qt.TextFormat.RichText)
        self.kernel_legend.setWordWrap(True)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        for widget in (
            self.title,
            self.message,
            self.legend,
            self.plot,
            self.stats,
            self.warnings,
            self.kernel_caption,
            self.kernel,
            self.kernel_legend,
        ):
            layout.addWidget(widget)
        layout.addStretch(1)
        self.show_message("")

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "plot"):
            follow_palette(self.plot, (self.plot.getPlotItem(),), self.palette())
            if self.current is not None:  # the table's grey is written into its HTML
                self.stats.setText(_stats_html(self.current, self._grey()))

    def _grey(self) -> str:
        return self.palette().color(QPalette.ColorRole.PlaceholderText).name()

    # ---- nothing to show --------------------------------------------------------------------

    def show_message(self, text: str, title: str = "") -> None:
        self.current = None
        self.title.setText(title)
        self.title.setVisible(bool(title))
        self.message.setText(text)
        self.message.setVisible(bool(text))
        for widget in (
            self.legend,
            self.plot,
            self.stats,
            self.warnings,
            self.kernel_caption,
            self.kernel,
            self.kernel_legend,
        ):
            widget.hide()

    # ---- one blob ---------------------------------------------------------------------------
    def show_preview(self, preview: Preview, title: str) -> None:
        self.current = preview
        self.title.setText(title)
        self.title.show()
        self.message.hide()
        self._histogram(preview)
        self.stats.setText(_stats_html(preview, self._grey()))
        self.stats.show()
        self.warnings.setText("<br>".join(f"⚠ {w}" for w in preview.warnings))
        self.warnings.setVisible(bool(preview.warnings))
        self._kernels(preview)

    def _histogram(self, p: Preview) -> None:
        self.plot.show()
        self.bars.setData(p.edges, p.density)
        top = float(p.density.max()) if p.density.size else 1.0
        if p.theory is not None:
            self.curve.setData(*p.theory)
            top = max(top, float(np.max(p.theory[1])))
        else:
            self.curve.setData([], [])
        if p.spikes:
            xs = np.repeat([x for x, _ in p.spikes], 2)
            ys = np.array([[0.0, top * 1.08] for _ in p.spikes]).ravel()
            self.spikes.setData(xs, ys)
            x, mass = p.spikes[0]
            self.spike_text.setText(
                f"  {mass:.0%} of the values = {x:g}" if mass < 1 else f"  every value = {x:g}"
            )
            self.spike_text.setPos(x, top * 1.08)
        else:
            self.spikes.setData([], [])
            self.spike_text.setText("")
        keys = [f"<span style='color:{DRAWN}'>▇</span> the values drawn"]
        if p.theory is not None:
            keys.append(f"<span style='color:{THEORY}'>━</span> the filler's density")
        if p.spikes:
            keys.append(f"<span style='color:{THEORY}'>┃</span> a point mass")
        if p.theory is None and not p.spikes:
            keys.append(
                "(no density: "
                + ("the values are fixed" if p.filler.type == "bilinear" else "no closed form")
                + ")"
            )
        self.legend.setText(" &nbsp;&nbsp; ".join(keys))
        self.legend.show()
        self.plot.getPlotItem().enableAutoRange()

    def _kernels(self, p: Preview) -> None:
        image = p.kernel if p.kernel is not None else p.mosaic
        for widget in (self.kernel_caption, self.kernel, self.kernel_legend):
            widget.setVisible(image is not None)
        if image is None:
            return
        if p.kernel is not None:
            k = image.shape[0]
            f = math.ceil(k / 2)
            c = (2 * f - 1 - f % 2) / (2 * f)
            self.kernel_caption.setText(
                f"The {k}×{k} kernel every (output, channel) slice holds: "
                f"w(y, x) = (1 − |x/f − c|)·(1 − |y/f − c|), f = {f}, c = {c:g}"
            )
            self.kernel.setToolTip(
                "\n".join("  ".join(f"{v:.3f}" for v in row) for row in image) if k <= 8 else ""
            )
        else:
            self.kernel_caption.setText(f"The kernels as drawn — {p.mosaic_caption}")
            self.kernel.setToolTip("")
        self.kernel.show_array(image)
        limit = self.kernel.limit
        self.kernel_legend.setText(
            f"<span style='color:#2563aa'>■</span> negative &nbsp; □ zero &nbsp; "
            f"<span style='color:#c4302b'>■</span> positive &nbsp; (full colour at ±{limit:.3g})"
        )


def _stats_html(p: Preview, grey: str) -> str:
    e = p.expected or {}
    rows = [("mean", p.mean, e.get("mean")), ("std", p.std, e.get("std"))]
    if "nonzero_fraction" in e:
        rows.append(
            ("non-zero", float(np.count_nonzero(p.values)) / max(p.values.size, 1), e["nonzero_fraction"])
        )
    if "row_sum" in e and p.values.ndim:
        sums = p.values.reshape(p.values.shape[0], -1).sum(axis=1)
        rows.append(("row sum", float(sums.mean()), e["row_sum"]))
    cells = "".join(
        f"<tr><td style='color:{grey}'>{name}</td><td align='right'><b>{_number(drawn)}</b></td>"
        f"<td align='right'>{_number(want) if want is not None else '—'}</td>"
        f"<td style='color:{grey}'>{_gap(drawn, want)}</td></tr>"
        for name, drawn, want in rows
    )
    head = f"align='right' style='color:{grey}'"
    html = (
        f"<table cellspacing='0' cellpadding='2'><tr><td></td><td {head}>drawn</td>"
        f"<td {head}>&nbsp;&nbsp;expected</td><td></td></tr>{cells}</table>"
    )
    if "fan_in" in e:
        norm = {
            p.filler.FAN_IN: "fan_in",
            p.filler.FAN_OUT: "fan_out",
            p.filler.AVERAGE: "(fan_in + fan_out) / 2",
        }
        gain = "2/n" if p.filler.type == "msra" else "1/n"
        html += (
            f"<div>n = {norm[p.filler.variance_norm]} = <b>{e['n']:g}</b> &nbsp;·&nbsp; "
            f"fan_in {e['fan_in']:g} &nbsp;·&nbsp; fan_out {e['fan_out']:g} &nbsp;·&nbsp; "
            f"variance {gain}</div>"
        )
    return html


def _gap(drawn: float, want: float | None) -> str:
    if want is None or not math.isfinite(drawn) or not want:
        return ""
    return f"&nbsp;{(drawn - want) / abs(want):+.1%}"
