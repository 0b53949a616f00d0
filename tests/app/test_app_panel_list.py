"""The window's panels come from one list (app/panel_list.py): each declared panel is docked under its
object name and title, a group's panels are tabs in list order, the View menu toggles them in menu
order (Alt+N), and a panel added to the list is docked, tabbed and toggled with nothing else
(issue 27, point 3)."""

from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QLabel, QTabBar

from app import main_window
from app.main_window import MainWindow
from app.panel_list import COLUMN, PANELS, RIGHT
from app.panels import Panel


def column_tabs(w: MainWindow) -> list[str]:
    bars = [bar for bar in w.findChildren(QTabBar) if bar.parent() is w and bar.count() > 1]
    assert len(bars) == 1
    return [bars[0].tabText(i) for i in range(bars[0].count())]


def make(qtbot, settings: QSettings | None = None) -> MainWindow:
    w = MainWindow(settings=settings)
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_every_declared_panel_is_docked_tabbed_and_toggled_as_declared(qtbot) -> None:
    w = make(qtbot)
    for panel in PANELS:
        dock = w.docks[panel.name]
        assert dock.objectName() == panel.name and dock.windowTitle() == panel.title
        assert dock.isVisible() or panel.group  # a tab behind another is hidden, not gone
    assert column_tabs(w) == [p.title for p in PANELS if p.group == COLUMN]
    toggles = w.workbench.panels.toggles
    assert [t.text().replace("&", "") for t in toggles] == [
        p.title for p in sorted(PANELS, key=lambda p: p.menu)
    ]
    assert [t.shortcut().toString() for t in toggles] == [f"Alt+{n}" for n in range(1, len(PANELS) + 1)]
    w.training.shutdown()


def test_a_panel_added_to_the_list_is_docked_tabbed_toggled_and_remembered(qtbot, monkeypatch, tmp_path):
    notes = Panel("Notes", "notesDock", lambda w: QLabel("my notes"), RIGHT, COLUMN, menu=len(PANELS) + 1)
    monkeypatch.setattr(main_window, "PANELS", (*PANELS, notes))
    monkeypatch.setattr("app.workbench.PANELS", (*PANELS, notes))
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = make(qtbot, settings)
    assert column_tabs(w)[-1] == "Notes"
    toggle = w.workbench.panels.toggles[-1]
    assert toggle.text().replace("&", "") == "Notes"
    assert toggle.shortcut().toString() == f"Alt+{len(PANELS) + 1}"
    toggle.trigger()  # hidden by its View-menu toggle, and remembered so
    assert not w.docks["notesDock"].isVisible()
    w.workbench.closed()
    w.training.shutdown()
    w.close()

    again = make(qtbot, settings)
    assert not again.docks["notesDock"].isVisible()
    assert not again.docks["notesDock"].toggleViewAction().isChecked()
    again.training.shutdown()
