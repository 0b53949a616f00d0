"""pyqtgraph plots that follow the application palette (the View menu's light or dark theme).

pyqtgraph paints with its own colours (white background by default); ``follow_palette`` gives a plot
widget the palette's Base as background, muted axis lines and Text-coloured tick labels. Call it once
when the plot is built and again from the owner's ``changeEvent`` on ``QEvent.Type.PaletteChange``.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyqtgraph as pg
from PySide6.QtGui import QPalette


def follow_palette(
    view: pg.GraphicsView, plots: Iterable[pg.PlotItem], palette: QPalette, legend=None
) -> None:
    role = QPalette.ColorRole
    view.setBackground(palette.color(role.Base))
    line = pg.mkPen(palette.color(role.PlaceholderText))
    text = pg.mkPen(palette.color(role.Text))
    for plot in plots:
        for name in ("left", "bottom", "right", "top"):
            axis = plot.getAxis(name)
            axis.setPen(line)
            axis.setTextPen(text)
            if axis.labelText:  # the axis title keeps its text, takes the new colour
                axis.labelStyle["color"] = palette.color(role.Text).name()
                axis._updateLabel()
    if legend is not None:
        legend.setLabelTextColor(palette.color(role.Text))
        for _sample, label in legend.items:
            label.setText(label.text)  # re-render with the new colour
