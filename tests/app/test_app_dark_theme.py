"""The dark theme reaches the widgets that paint their own colours: canvas, prototxt editor, plots."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from app.files import EXAMPLES
from app.main_window import MainWindow
from app.themes import DARK, LIGHT, apply_theme

WAIT_MS = 10_000  # room for a loaded 2-core machine; each wait returns as soon as its condition holds


@pytest.fixture
def window(qtbot):
    app = QApplication.instance()
    sheet, palette, theme = app.styleSheet(), app.palette(), app.property("baristaTheme")
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    w.resize(1700, 1000)
    w.show()
    qtbot.waitExposed(w)
    yield w
    app.setStyleSheet(sheet)  # the theme is the application's: put it back as other tests had it
    app.setPalette(palette)
    app.setProperty("baristaTheme", theme)


def dark(colour) -> bool:
    return colour.lightness() < 80


def corner_pixel(widget):
    """A pixel of what the widget actually paints, near its bottom-left corner (clear of text)."""
    return widget.grab().toImage().pixelColor(3, widget.height() - 3)


def test_dark_theme_repaints_canvas_editor_and_plots(qtbot, window, tmp_path):
    assert window.open_file(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    app = QApplication.instance()
    apply_theme(app, LIGHT)
    scene, view, edit = window.graph.scene, window.graph.view, window.editor.edit
    plots = window.training.plots

    # The palette reaches each widget at once (PaletteChange is sent, not posted) and grab() paints
    # synchronously; waiting on the checks themselves (each returns as soon as it holds) leaves room for
    # anything a view repaints later, with no fixed sleep.
    def light() -> None:
        assert not dark(scene.backgroundBrush().color()) and not dark(corner_pixel(view.viewport()))
        assert not dark(edit.colour("gutter_bg")) and not dark(plots.graphics.backgroundBrush().color())

    qtbot.waitUntil(light, timeout=WAIT_MS)
    section_light = window.editor.highlighter.colour("section")

    apply_theme(app, DARK)

    def dark_everywhere() -> None:
        assert dark(scene.backgroundBrush().color())
        assert dark(corner_pixel(view.viewport()))  # the painted canvas, grid tile included
        assert dark(corner_pixel(edit._gutter)) and dark(edit.colour("current"))
        assert dark(corner_pixel(window.editor.footer))
        section_dark = window.editor.highlighter.colour("section")
        assert section_dark != section_light and section_dark.lightness() > 128  # light text on dark
        assert dark(plots.graphics.backgroundBrush().color())
        assert plots.loss_plot.getAxis("left").textPen().color().lightness() > 128

    qtbot.waitUntil(dark_everywhere, timeout=WAIT_MS)
    assert window.grab().save(str(tmp_path / "dark.png"))

    apply_theme(app, LIGHT)  # and back

    def light_again() -> None:
        assert not dark(corner_pixel(view.viewport())) and not dark(corner_pixel(edit._gutter))
        assert window.editor.highlighter.colour("section") == section_light

    qtbot.waitUntil(light_again, timeout=WAIT_MS)
