"""Whether the net's and the solver's files changed on disk behind the document's back.

Another window on the same net, or another editor, may write the file while it is open here. Save
must not then silently replace their change with ours, so every file the document holds is
remembered as it was when opened or saved (its size and a digest of its bytes: a rewrite with the
same bytes is no change) and compared before Save. While the window is open, a file watcher notices
such a change at once: a part with no unsaved edits is reloaded (nothing is lost); one with unsaved
edits asks, as Save does: reload theirs, keep mine, or save mine elsewhere.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer

from graph_view.document_api import Kind

RELOAD, KEEP, SAVE_AS, CANCEL = "reload", "keep", "save_as", "cancel"
_DIGEST_LIMIT = 512 * 1024 * 1024  # past this a file is compared by size and time only


def stamp(path: str) -> tuple[int, str] | None:
    """(size, digest) of the file as it is now; None when it is gone or unreadable."""
    try:
        info = os.stat(path)
        if info.st_size > _DIGEST_LIMIT:
            return (info.st_size, f"mtime:{info.st_mtime_ns}")
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return (info.st_size, digest.hexdigest())
    except OSError:
        return None


class DiskWatch(QObject):
    """Remembers the document's files as they were; says which changed since.

    ``on_changed(paths)`` is called (on the GUI thread) when the watcher sees a remembered file
    change into something else.
    """

    def __init__(self, doc, on_changed: Callable[[list[str]], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self._on_changed = on_changed
        self._stamps: dict[str, tuple[int, str] | None] = {}
        self._settle = QTimer(self, singleShot=True, interval=150)  # a writer's rename settles first
        self._settle.timeout.connect(self._check)
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(lambda _path: self._settle.start())
        doc.changed.connect(self._on_doc)
        self.remember()

    def paths(self) -> list[str]:
        return [p for p in (self.doc.net_path, self.doc.solver_path) if p]

    def remember(self) -> None:
        """The document's files as they are now are what it holds (after open or save)."""
        self._stamps = {path: stamp(path) for path in self.paths()}
        self._watch()

    def changed_files(self) -> list[str]:
        """The document's files that differ on disk from what was opened or saved (a deleted one too)."""
        return [path for path, was in self._stamps.items() if was is not None and stamp(path) != was]

    def accept(self, paths: list[str]) -> None:
        """Take the files as they are now as known (the user chose to keep their own version)."""
        for path in paths:
            self._stamps[path] = stamp(path)

    def _watch(self) -> None:
        watched = self.watcher.files()
        if watched:
            self.watcher.removePaths(watched)
        existing = [p for p in self._stamps if os.path.isfile(p)]
        if existing:
            self.watcher.addPaths(existing)  # again after each save: an atomic rename replaces the file

    def _on_doc(self, change) -> None:
        if change.kind in (Kind.NET_LOADED, Kind.SOLVER_LOADED, Kind.PATH_CHANGED):
            self.remember()

    def _check(self) -> None:
        self._watch()
        changed = self.changed_files()
        if changed:
            self._on_changed(changed)


def ask(parent, paths: list[str], saving_now: bool) -> str:
    """RELOAD, KEEP, SAVE_AS or CANCEL, asked in words naming the files."""
    from PySide6.QtWidgets import QMessageBox

    names = ", ".join(os.path.basename(p) for p in paths)
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("Changed on disk")
    box.setText(f"{names} changed on disk since you opened or saved it (another window or program wrote it).")
    box.setInformativeText(
        "Reload it (your unsaved changes here are lost), keep your version (Save replaces theirs), "
        "or save yours under another name?"
    )
    reload = box.addButton("Reload", QMessageBox.ButtonRole.DestructiveRole)
    keep = box.addButton(
        "Save Mine Over It" if saving_now else "Keep Mine", QMessageBox.ButtonRole.AcceptRole
    )
    save_as = box.addButton("Save As…", QMessageBox.ButtonRole.ActionRole)
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(cancel)
    box.setEscapeButton(cancel)
    box.exec()
    clicked = box.clickedButton()
    return {id(reload): RELOAD, id(keep): KEEP, id(save_as): SAVE_AS}.get(id(clicked), CANCEL)
