"""The initialisation panels follow the application theme, at run time: painted pixels, not settings."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QApplication

from app.files import EXAMPLES
from app.fillers.panel import FillerPanel
from app.main_window import MainWindow
from app.themes import DARK, LIGHT, apply_theme

WAIT_MS = 30_000  # room for a loaded 2-core machine; each wait returns as soon as its condition holds


@pytest.fixture
def window(qtbot):
    app = QApplication.instance()
    sheet, palette, theme = app.styleSheet(), app.palette(), app.property("baristaTheme")
    apply_theme(app, LIGHT)
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    # The deploy net (Input layers): its preview never waits on the bundled MNIST being converted, which a
    # fresh machine has not done yet (the train/test net's Data layers would leave the preview a message).
    assert w.open_file(EXAMPLES / "mnist" / "lenet.prototxt")
    w.resize(1400, 900)
    w.show()
    qtbot.waitExposed(w)
    w.filler_dock.raise_()
    w.selection.select([layer.name for layer in w.doc.net.layer].index("conv1"))
    panel = w.filler_dock.widget()  # its rows come from a computation off the GUI thread: wait for them
    assert isinstance(panel, FillerPanel)
    qtbot.waitUntil(lambda: panel.title.text().startswith("conv1") and len(panel.rows) == 2, timeout=WAIT_MS)
    yield w
    fillers, start = w.filler_dock.widget(), w.net_start_dock.widget()
    for jobs in (fillers.build_jobs, fillers.preview_jobs, start.jobs):
        assert jobs.wait(10000)  # no computation left running into the next test
    app.setStyleSheet(sheet)  # the theme is the application's: put it back as other tests had it
    app.setPalette(palette)
    app.setProperty("baristaTheme", theme)


def lightness_range(widget) -> tuple[int, int]:
    """The darkest and the lightest pixel the widget paints (its text and its background)."""
    image = widget.grab().toImage()
    values = [
        image.pixelColor(x, y).lightness()
        for x in range(0, image.width(), 2)
        for y in range(0, image.height(), 2)
    ]
    return min(values), max(values)


def background(widget):
    """A pixel inside the widget's frame, clear of its text (rows keep 8 px of margin)."""
    return widget.grab().toImage().pixelColor(4, widget.height() // 2)


def test_filler_panel_follows_the_theme_at_run_time(qtbot, window):
    panel, app = window.filler_dock.widget(), QApplication.instance()
    qtbot.waitUntil(lambda: len(panel.rows) == 2, timeout=WAIT_MS)
    assert panel.title.text().startswith("conv1")
    row, title = panel.rows[0], panel.title
    assert background(row).lightness() > 200
    assert lightness_range(title)[0] < 90  # dark text on the light theme

    apply_theme(app, DARK)
    qtbot.waitUntil(lambda: background(row).lightness() < 80, timeout=WAIT_MS)  # the row card is dark...
    assert lightness_range(row.shape)[1] > 170  # ...its shape text light
    darkest, lightest = lightness_range(title)
    assert darkest < 80 and lightest > 170  # light text on a dark panel
    current, other = background(panel.rows[0]), background(panel.rows[1])
    assert current != other  # the chosen blob's card still stands out

    apply_theme(app, LIGHT)  # and back
    qtbot.waitUntil(lambda: background(row).lightness() > 200, timeout=WAIT_MS)
    assert lightness_range(title)[0] < 90


def test_preview_and_net_start_texts_follow_the_theme(qtbot, window):
    app = QApplication.instance()
    panel = window.filler_dock.widget()
    stats = panel.preview.stats
    # The preview may already have been drawn before this line runs (a signal can be missed): wait on its
    # visible result instead, with room for a loaded 2-core machine.
    qtbot.waitUntil(lambda: stats.isVisible() and "drawn" in stats.text(), timeout=WAIT_MS)
    light_grey = window.palette().color(window.palette().ColorRole.PlaceholderText).name()
    assert light_grey in stats.text()

    apply_theme(app, DARK)

    # The palette reaches each widget at once (PaletteChange is sent, not posted) and grab() paints
    # synchronously; waiting on the checks themselves (each returns as soon as it holds) leaves room for
    # a text rewritten later, with no fixed sleep.
    def grey_follows() -> None:
        dark_grey = window.palette().color(window.palette().ColorRole.PlaceholderText).name()
        assert dark_grey != light_grey and dark_grey in stats.text() and light_grey not in stats.text()

    qtbot.waitUntil(grey_follows, timeout=WAIT_MS)
    start = window.net_start_dock.widget()
    intro = start.findChild(type(stats), "netStartIntro")
    window.net_start_dock.raise_()
    # Its tab now the one shown, the introduction reads light on dark.
    qtbot.waitUntil(lambda: intro.isVisible() and lightness_range(intro)[1] > 150, timeout=WAIT_MS)


def test_canvas_toolbar_follows_the_theme(qtbot, window):
    app = QApplication.instance()
    button = window.graph.toolbar.test  # unchecked: painted with the palette's button colour
    assert background(button).lightness() > 200
    apply_theme(app, DARK)

    def dark() -> None:  # waited on as in the test above
        assert background(button).lightness() < 80
        assert lightness_range(button)[1] > 170  # its label reads light
        bar = window.graph.toolbar  # on the window's toolbar row: the row between its buttons and totals
        gap = bar.mapTo(window, bar.totals.geometry().topLeft()) + QPoint(-12, bar.height() // 2)
        assert window.grab().toImage().pixelColor(gap).lightness() < 80

    qtbot.waitUntil(dark, timeout=WAIT_MS)
