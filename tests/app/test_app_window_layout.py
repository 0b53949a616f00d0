"""The window gives the canvas the room: at 1280x800 the canvas holds most of the window, the
training dock stays folded to its bar until Train (and remembers the user's fold), one key hides
every panel and brings the same ones back."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QSettings, Qt
from PySide6.QtWidgets import QTabBar, QToolBar
from windows import open_window

from app.files import EXAMPLES
from app.main_window import MainWindow


@pytest.fixture
def window(qtbot):
    w = make(qtbot)
    yield w
    w.training.shutdown()


def make(qtbot, settings: QSettings | None = None) -> MainWindow:
    w = open_window(qtbot, EXAMPLES / "mnist" / "lenet_train_test.prototxt", settings=settings)
    qtbot.waitUntil(lambda: not w.graph._fit_pending)
    return w


def test_canvas_holds_most_of_a_1280x800_window(qtbot, window):
    viewport = window.graph.view.viewport()  # what shows the net: no toolbar, footer or frame
    area = viewport.width() * viewport.height() / (window.width() * window.height())
    assert area >= 0.60, (viewport.size(), area)
    assert viewport.width() >= 0.70 * window.width(), viewport.width()
    dock = window.training
    assert not dock.expanded and not dock.tabs.isVisible()
    assert dock.height() <= 40 and dock.buttons["train"].isVisible()  # its bar, no title: Train is one click
    assert dock.width() == window.graph.width()  # under the canvas only: the column runs the full height


def test_one_toolbar_row_holds_the_canvas_buttons_and_totals(qtbot, window):
    bar = window.findChild(QToolBar, "mainToolbar")
    canvas_bar = window.graph.toolbar
    assert canvas_bar.parentWidget() is bar  # the window's row: no second row above the canvas
    assert canvas_bar.totals.isVisible() and canvas_bar.totals.text().startswith("9 of 11 layers")
    assert canvas_bar.totals.width() >= canvas_bar.totals.sizeHint().width()  # whole at 1280
    top = window.graph.view.mapTo(window, QPoint(0, 0)).y()
    assert top == bar.geometry().bottom() + 1  # the canvas starts right under the row
    bottom = window.graph.view.mapTo(window, QPoint(0, window.graph.view.height())).y()
    assert window.training.geometry().top() - bottom <= 8  # no footer row below it (a splitter)


def test_the_right_column_is_330_to_380_px_with_every_tab_title_whole(qtbot, window):
    bench = window.workbench
    column = window.width() - window.editor_dock.geometry().left()
    assert 330 <= column <= 380, column
    group = [window.editor_dock, *window.tabifiedDockWidgets(window.editor_dock)]
    assert bench.palette_dock in group and bench.solver_dock in group and window.filler_dock in group
    tabs = next(b for b in window.findChildren(QTabBar) if b.isVisible() and b.count() == len(group))
    for i in range(tabs.count()):  # vertical tabs: each as tall as its whole title needs
        assert tabs.tabRect(i).height() >= tabs.tabSizeHint(i).height(), tabs.tabText(i)
    assert bench.inspector_dock.height() >= 250  # the inspector below them keeps room for fields
    bench.palette_dock.raise_()  # the layers to add: a click away, as wide as the column
    qtbot.waitUntil(lambda: bench.palette.tree.isVisible())
    assert bench.palette.tree.width() >= 300


def test_training_unfolds_on_train_and_keeps_the_users_fold(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "barista.ini"), QSettings.Format.IniFormat)
    first = make(qtbot, settings)
    dock = first.training
    started = []
    dock.controller.start = lambda device: started.append(device)  # the dock's part only: no run
    dock.train_action.trigger()
    assert started == ["cpu"] and dock.expanded and dock.tabs.isVisible()
    qtbot.waitUntil(lambda: dock.height() >= 200)  # a third of the window for the curves
    qtbot.mouseClick(dock.fold, Qt.MouseButton.LeftButton)  # the user folds it
    assert not dock.expanded and not dock.tabs.isVisible()
    dock.train_action.trigger()
    assert not dock.expanded  # Train keeps the fold the user chose
    first.close()

    second = make(qtbot, QSettings(str(tmp_path / "barista.ini"), QSettings.Format.IniFormat))
    assert second.training.user_expanded is False and not second.training.expanded
    qtbot.mouseClick(second.training.fold, Qt.MouseButton.LeftButton)
    assert second.training.expanded and second.training.tabs.isVisible()
    second.close()
    third = make(qtbot, QSettings(str(tmp_path / "barista.ini"), QSettings.Format.IniFormat))
    assert third.training.expanded  # unfolded by the user: it opens unfolded
    third.close()


def test_one_key_hides_every_panel_and_brings_the_same_ones_back(qtbot, window):
    bench = window.workbench
    bench.palette_dock.hide()  # hidden by the user before: stays hidden afterwards
    shown = [d for d in bench.panels.docks if d.isVisible()]
    assert window.training in shown and window.editor_dock in shown
    window.graph.view.setFocus()
    qtbot.keyClick(window.graph.view, Qt.Key.Key_F12)
    assert not any(d.isVisible() for d in bench.panels.docks)
    qtbot.waitUntil(lambda: window.graph.width() >= window.width() - 10)  # the canvas has the width
    qtbot.keyClick(window.graph.view, Qt.Key.Key_F12)
    assert [d for d in bench.panels.docks if d.isVisible()] == shown
    assert not bench.palette_dock.isVisible()


def test_each_panel_has_its_own_key_shown_in_the_view_menu(qtbot, window):
    bench = window.workbench
    keys = [toggle.shortcut().toString() for toggle in bench.panels.toggles]
    assert keys == [f"Alt+{n}" for n in range(1, 8)]
    assert bench.inspector_dock.toggleViewAction() in bench.panels.toggles
    qtbot.keyClick(window.graph.view, Qt.Key.Key_1, Qt.KeyboardModifier.AltModifier)
    assert not bench.palette_dock.isVisible()
    qtbot.keyClick(window.graph.view, Qt.Key.Key_1, Qt.KeyboardModifier.AltModifier)
    assert bench.palette_dock.isVisible()
