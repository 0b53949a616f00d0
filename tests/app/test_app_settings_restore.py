"""What the window remembers between runs, in a temporary settings file (never the user's)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from app.main_window import MainWindow
from app.session import GEOMETRY, STATE, THEME
from app.themes import DARK, LIGHT, current_theme, palette_for


@pytest.fixture
def settings_path(tmp_path):
    app = QApplication.instance()
    sheet, palette, theme = app.styleSheet(), app.palette(), app.property("baristaTheme")
    yield tmp_path / "barista.ini"
    app.setStyleSheet(sheet)  # the theme is the application's: put it back as other tests had it
    app.setPalette(palette)
    app.setProperty("baristaTheme", theme)


def settings_at(path) -> QSettings:
    return QSettings(str(path), QSettings.Format.IniFormat)


def make_window(qtbot, path) -> MainWindow:
    w = MainWindow(settings=settings_at(path))
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *args: "discard"
    return w


def test_geometry_docks_and_theme_come_back(qtbot, settings_path):
    """Closing saves the layout; the next window restores it as it is first shown."""
    first = make_window(qtbot, settings_path)
    first.show()
    qtbot.waitExposed(first)
    first.showMaximized()  # (the offscreen screen is smaller than the window: sizes are clamped)
    first.workbench.palette_dock.hide()
    first.workbench.dark_action.trigger()
    assert current_theme(QApplication.instance()) == DARK
    assert first.close()
    stored = settings_at(settings_path)
    assert (
        stored.value(THEME) == DARK
        and not stored.value(GEOMETRY).isEmpty()
        and not stored.value(STATE).isEmpty()
    )

    QApplication.instance().setProperty("baristaTheme", LIGHT)  # as a fresh start would have it
    QApplication.instance().setPalette(palette_for(LIGHT))
    second = make_window(qtbot, settings_path)
    assert second.workbench.palette_dock.isVisibleTo(second)  # before the window shows: defaults
    second.show()
    qtbot.waitExposed(second)
    assert second.isMaximized()
    assert not second.workbench.palette_dock.isVisible() and second.workbench.inspector_dock.isVisible()
    assert current_theme(QApplication.instance()) == DARK
    assert QApplication.instance().palette().window().color().lightness() < 80
    assert "#inspectorHeader" in QApplication.instance().styleSheet()
    second.workbench.view_menu.aboutToShow.emit()
    assert second.workbench.dark_action.isChecked()


def test_recent_files_persist_newest_first(qtbot, settings_path, tmp_path):
    nets = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.prototxt"
        path.write_text(f'name: "{name}"\n')
        nets.append(path)
    first = make_window(qtbot, settings_path)
    for path in nets:
        assert first.open_file(path)
    assert first.workbench.recent.paths() == [str(nets[1]), str(nets[0])]
    first.close()

    second = make_window(qtbot, settings_path)
    menu = second.workbench.recent_menu
    menu.aboutToShow.emit()
    labels = [a.text() for a in menu.actions() if a.data()]
    assert labels == ["&1  b.prototxt", "&2  a.prototxt"]
    next(a for a in menu.actions() if a.data() == str(nets[0])).trigger()
    assert second.doc.net.name == "a" and second.workbench.recent.paths()[0] == str(nets[0])


def test_without_settings_nothing_is_remembered(qtbot):
    w = MainWindow()
    qtbot.addWidget(w)
    assert w.workbench.session is None and w.workbench.autosave is None
    assert w.workbench.recent.settings is None
