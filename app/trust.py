"""Trust before code: a net's Python layers run only once the user trusts the net's folder.

Opening a net (File > Open, a drop, Open Recent, autosave recovery) never imports its Python
layers' modules: ``engine.pyimport``'s gate, on for the whole app, refuses them, so their shapes
are unknown and their boxes say "Python layer: not run". The first time a net of an untrusted
folder is opened, one prompt names the folder and the modules; Train, the filler draws and "How
the net starts" ask the same before running the folder's code. Trusted folders are remembered in
the settings (``trust/folders``) and listed, to be taken back, under File > Trusted Folders…
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable

from PySide6.QtCore import QObject, QSettings, QTimer, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from app.settings_values import string_list
from engine import pyimport, pymodules

KEY = "trust/folders"

_guards: weakref.WeakKeyDictionary[object, TrustGuard] = weakref.WeakKeyDictionary()


class TrustedFolders(QObject):
    """The folders whose Python code the user allowed; kept in ``settings`` (in memory without)."""

    changed = Signal()

    def __init__(self, settings: QSettings | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        paths = string_list(settings.value(KEY, [])) if settings is not None else []
        # Only what add() stores, absolute folders: a stray "5" must not trust the working directory's "5".
        self._folders = list(dict.fromkeys(os.path.normpath(p) for p in paths if os.path.isabs(p)))
        pyimport.require_trust(self._folders)

    def folders(self) -> list[str]:
        return list(self._folders)

    def add(self, folder: str) -> None:
        folder = os.path.abspath(folder)
        if folder not in self._folders:
            self._store([*self._folders, folder])

    def remove(self, folder: str) -> None:
        self._store([f for f in self._folders if f != folder])

    def _store(self, folders: list[str]) -> None:
        self._folders = folders
        if self.settings is not None:
            self.settings.setValue(KEY, folders)
        pyimport.require_trust(folders)
        self.changed.emit()


def guard_of(doc: object) -> TrustGuard | None:
    """The guard of the window editing ``doc`` (None for a document no window guards)."""
    return _guards.get(doc)


class TrustGuard(QObject):
    """Asks before the document's Python layers run: once per folder and session on open, and
    whenever a run needs them (``ensure``)."""

    changed = Signal()  # a folder was trusted or taken back: whatever ran the net, run it again

    def __init__(self, doc, window: QWidget, settings: QSettings | None = None) -> None:
        super().__init__(window)
        self.doc, self.window = doc, window
        self.folders = TrustedFolders(settings, self)
        self.folders.changed.connect(self.changed)
        self.box: QMessageBox | None = None  # the prompt, while it is shown
        self._asked: set[str] = set()  # folders asked about this session (answered either way)
        self._then: list[Callable[[], object]] = []
        doc.changed.connect(self._on_change)
        _guards[doc] = self

    def needed(self) -> tuple[list[str], list[str]]:
        """(the untrusted folders the net's Python layers would come from, their modules)."""
        modules = pymodules.module_names(self.doc.net)
        if not modules:
            return [], []
        where = pymodules.folders(self.doc.net_path, self.doc.solver_path)
        return pyimport.untrusted(where), modules

    def ensure(self, then: Callable[[], object] | None = None, ask_again: bool = True) -> bool:
        """True when the net's code may run now. Otherwise ask (unless asked already this session
        and not ``ask_again``) and return False; ``then`` runs once the user trusts the folder."""
        folders, modules = self.needed()
        if not folders:
            return True
        if ask_again or not set(folders) <= self._asked:
            if then is not None:
                self._then.append(then)
            self._ask(folders, modules)
        return False

    def _on_change(self, change) -> None:
        if str(getattr(change, "kind", change)) == "net_loaded":
            QTimer.singleShot(0, self, self._offer)  # once the path is set too

    def _offer(self) -> None:
        self.ensure(ask_again=False)

    def _ask(self, folders: list[str], modules: list[str]) -> None:
        if self.box is not None:
            return  # one prompt at a time; its answer serves every caller
        box = QMessageBox(self.window)
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Run this net's Python code?")
        where = "\n".join(f"    {f}" for f in folders)
        names = ", ".join(f"{m}.py" for m in modules)
        box.setText(f"This net's Python layers import code from its folder:\n{where}")
        box.setInformativeText(
            f"Modules: {names}\n\nTrust the folder only if you know where it came from: its code runs "
            "with your permissions. Until then the Python layers are not run (their shapes are "
            "unknown). Trusted folders can be taken back under File > Trusted Folders…"
        )
        self.trust_button = box.addButton("Trust Folder", QMessageBox.ButtonRole.AcceptRole)
        self.not_now_button = box.addButton("Not Now", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(self.not_now_button)
        box.finished.connect(lambda _result: self._answered(box, folders))
        self.box = box
        box.open()

    def _answered(self, box: QMessageBox, folders: list[str]) -> None:
        self.box = None
        self._asked.update(folders)
        then, self._then = self._then, []
        if box.clickedButton() is not self.trust_button:
            return
        for folder in folders:
            self.folders.add(folder)
        for action in then:
            action()
