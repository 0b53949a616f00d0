"""File > Open Recent: the last files opened or saved, newest first, kept in QSettings.

Without settings (tests, a window made by hand) the list lives only as long as the window.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from app.settings_values import string_list

KEY = "recent/files"
LIMIT = 10


class RecentFiles(QObject):
    changed = Signal()

    def __init__(
        self, settings: QSettings | None = None, limit: int = LIMIT, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.settings, self.limit = settings, limit
        self._paths: list[str] = []
        if settings is not None:
            self._paths = string_list(settings.value(KEY, []))[: self.limit]

    def paths(self) -> list[str]:
        return list(self._paths)

    def add(self, path: str | os.PathLike[str]) -> None:
        path = os.path.abspath(os.fspath(path))
        self._paths = [path, *(p for p in self._paths if p != path)][: self.limit]
        self._store()

    def remove(self, path: str) -> None:
        self._paths = [p for p in self._paths if p != path]
        self._store()

    def clear(self) -> None:
        self._paths = []
        self._store()

    def _store(self) -> None:
        if self.settings is not None:
            self.settings.setValue(KEY, self._paths)
        self.changed.emit()


def labels(paths: list[str]) -> list[str]:
    """Each file's name; names that several paths share get their folders too, as many of the
    folders' last parts as it takes to tell them apart (``lenet_solver.prototxt — mnist``)."""
    names = [os.path.basename(p) for p in paths]
    shown = list(names)
    for name in set(names):
        same = [i for i, n in enumerate(names) if n == name]
        if len(same) < 2:
            continue
        folders = [os.path.dirname(paths[i]).split(os.sep) for i in same]
        for depth in range(1, max(len(f) for f in folders) + 1):
            tails = [os.sep.join(f[-depth:]) or os.sep for f in folders]
            if len(set(tails)) == len(tails):
                break
        for i, tail in zip(same, tails):
            shown[i] = f"{name} — {tail}"
    return shown


def fill_menu(menu: QMenu, recent: RecentFiles, open_path: Callable[[str], object]) -> None:
    """Rebuild ``menu`` from ``recent``: one action per file (missing ones disabled), then Clear."""
    menu.clear()
    paths = recent.paths()
    for number, (path, text) in enumerate(zip(paths, labels(paths)), 1):
        label = f"&{number % 10}  {text}" if number <= 10 else text
        action = QAction(label, menu)
        action.setToolTip(path)
        action.setStatusTip(path)
        action.setData(path)
        action.setEnabled(os.path.exists(path))
        action.triggered.connect(lambda _checked=False, p=path: open_path(p))
        menu.addAction(action)
    if not paths:
        empty = menu.addAction("No recent files")
        empty.setEnabled(False)
    menu.addSeparator()
    clear = menu.addAction("Clear Recent Files")
    clear.setEnabled(bool(paths))
    clear.triggered.connect(recent.clear)
