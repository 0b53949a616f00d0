"""Panels that paint their own colours follow a theme switch at run time: the training dock's weights
view and the canvas's problems list (painted pixels and item colours, light -> dark -> light)."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from app.themes import DARK, LIGHT, apply_theme
from app.training.weights_view import WeightsView
from graph_view.problems import ProblemList
from graph_view.validation import ERROR, WARNING, Problem

WAIT_MS = 10_000  # room for a loaded 2-core machine; each wait returns as soon as its condition holds


@pytest.fixture
def app():
    app = QApplication.instance()
    sheet, palette, theme = app.styleSheet(), app.palette(), app.property("baristaTheme")
    apply_theme(app, LIGHT)
    yield app
    app.setStyleSheet(sheet)  # the theme is the application's: put it back as other tests had it
    app.setPalette(palette)
    app.setProperty("baristaTheme", theme)


def pixel(widget, x: int = 3, y: int | None = None):
    return widget.grab().toImage().pixelColor(x, widget.height() - 3 if y is None else y)


def title_colour(view: WeightsView) -> QColor:
    return QColor(view._hist_plots["conv1"].titleLabel.opts["color"])


def test_weights_view_mosaic_and_histograms_follow_the_theme(qtbot, app):
    view = WeightsView()
    qtbot.addWidget(view)
    view.resize(800, 260)
    view.show()
    qtbot.waitExposed(view)
    rng = np.random.default_rng(0)
    weights = {"conv1": [rng.normal(size=(4, 1, 3, 3))], "ip1": [rng.normal(size=(10, 36))]}
    view.show_weights("Run 1", 5, weights)

    # The palette reaches each widget at once (PaletteChange is sent, not posted) and grab() paints
    # synchronously; waiting on the checks themselves (each returns as soon as it holds) leaves room for
    # anything a plot redraws later, with no fixed sleep.
    def light() -> None:
        assert pixel(view.mosaic_widget).lightness() > 200 and pixel(view.histograms).lightness() > 200
        title = view._hist_plots["conv1"].titleLabel
        assert title.text.startswith("conv1 4×1×3×3") and title_colour(view).lightness() < 100

    qtbot.waitUntil(light, timeout=WAIT_MS)

    apply_theme(app, DARK)

    def dark() -> None:
        assert pixel(view.mosaic_widget).lightness() < 80 and pixel(view.histograms).lightness() < 80
        axis = view._hist_plots["ip1"].getAxis("bottom")
        assert axis.textPen().color().lightness() > 150  # tick labels read light on dark
        assert title_colour(view).lightness() > 150

    qtbot.waitUntil(dark, timeout=WAIT_MS)

    apply_theme(app, LIGHT)

    def light_again() -> None:
        assert pixel(view.histograms).lightness() > 200
        assert title_colour(view).lightness() < 100

    qtbot.waitUntil(light_again, timeout=WAIT_MS)


def test_problem_list_follows_the_theme(qtbot, app):
    problems = ProblemList()
    qtbot.addWidget(problems)
    problems.resize(500, 80)
    problems.show_problems(
        [Problem(ERROR, "conv1", 1, "bottom 'x' is not produced"), Problem(WARNING, "fc", 2, "unused top")]
    )
    qtbot.waitExposed(problems)
    assert problems.count() == 2 and problems.item(0).text().startswith("✖  conv1")
    light_error = problems.item(0).foreground().color()
    assert pixel(problems, 3, 3).lightness() > 200 and light_error.lightness() < 128

    apply_theme(app, DARK)

    def dark() -> None:  # waited on as the weights view's checks are
        assert pixel(problems, 3, 3).lightness() < 80  # a dark list on the dark canvas...
        assert problems.item(0).foreground().color().lightness() > 150  # ...with light red and amber text
        assert problems.item(1).foreground().color().lightness() > 150
        assert problems.count() == 2 and problems.item(0).text().startswith("✖  conv1")  # the same rows

    qtbot.waitUntil(dark, timeout=WAIT_MS)

    apply_theme(app, LIGHT)
    qtbot.waitUntil(lambda: problems.item(0).foreground().color() == light_error, timeout=WAIT_MS)
