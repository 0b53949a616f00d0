"""Crash safety: unsaved work is written to a recovery folder every 30 seconds.

Each running window owns ``<folder>/session-<id>/``: a lock (held while the window lives), a
manifest, and the net and solver as prototxt (plus the editor's text when it holds typing the
net does not have yet, such as a half-written line). A clean exit removes the folder; when the
work is saved (not dirty), the files go too, so only unsaved work is ever offered back. A folder
whose lock nobody holds belongs to a window that did not exit cleanly: ``app.recovery`` offers it
at the next start. QLockFile ties the lock to the process: when a crash kills the process, the
lock is stale and the next start can take it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QLockFile, QObject, QStandardPaths, QTimer

from app.document import Document
from engine.data.paths import user_data_dir
from proto.atomic import write_text_atomic

INTERVAL_MS = 30_000
MANIFEST, NET_FILE, SOLVER_FILE, EDITOR_FILE, LOCK_FILE = (
    "manifest.json",
    "net.prototxt",
    "solver.prototxt",
    "editor.prototxt",
    "lock",
)


def default_folder() -> Path:
    """``<user data>/recovery``: the one per-user data folder (``engine.data.paths.user_data_dir``,
    ``~/.local/share/barista``), beside the runs and the bundled data. Work that earlier versions
    autosaved under Qt's AppDataLocation (``~/.local/share/Barista/Barista``, a second folder that
    differed only by case) is moved here once, when nothing is here yet; nothing is deleted."""
    folder = user_data_dir() / "recovery"
    _adopt_old_folder(folder)
    return folder


def _adopt_old_folder(folder: Path) -> None:
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    old = Path(base) / "recovery" if base else None
    if old is None or not old.is_dir() or os.path.lexists(folder):
        return
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        os.rename(old, folder)  # one file system (the same data folder): a move, never a copy
    except OSError:
        return  # the old folder stays where it was, and is still whole
    for parent in (old.parent, old.parent.parent):  # Barista/Barista, left empty by the move
        if parent.name == "Barista":
            with contextlib.suppress(OSError):  # not empty: it is kept
                parent.rmdir()


def make_lock(folder: Path) -> QLockFile:
    lock = QLockFile(str(folder / LOCK_FILE))
    lock.setStaleLockTime(0)  # never stale by age: only when its process is gone
    return lock


class Autosave(QObject):
    def __init__(
        self,
        doc: Document,
        folder: str | os.PathLike[str],
        pending_text: Callable[[], str | None],
        interval_ms: int = INTERVAL_MS,
        parent: QObject | None = None,
    ) -> None:
        """``pending_text()``: the editor's text when the document does not have it yet, else None."""
        super().__init__(parent)
        self.doc, self._pending_text = doc, pending_text
        self.folder = Path(folder) / f"session-{uuid.uuid4().hex[:12]}"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.lock = make_lock(self.folder)
        self.lock.tryLock(0)
        self.saved_at: float | None = None
        self.timer = QTimer(self, interval=interval_ms)
        self.timer.timeout.connect(self.save_now)
        self.timer.start()

    def save_now(self) -> bool:
        """Write the unsaved work now; True when something was written (False: nothing to save)."""
        pending = self._pending_text()
        if not self.doc.dirty and pending is None:
            self._remove_files()
            return False
        write_text_atomic(self.folder / NET_FILE, self.doc.net_text())
        write_text_atomic(self.folder / SOLVER_FILE, self.doc.solver_text())
        editor = self.folder / EDITOR_FILE
        if pending is not None:
            write_text_atomic(editor, pending)
        elif editor.exists():
            editor.unlink()
        manifest: dict[str, Any] = {
            "version": 1,
            "saved_at": time.time(),
            "pid": os.getpid(),
            "net_path": self.doc.net_path,
            "solver_path": self.doc.solver_path,
            "net_dirty": self.doc.net_dirty,
            "solver_dirty": self.doc.solver_dirty,
        }
        write_text_atomic(self.folder / MANIFEST, json.dumps(manifest, indent=1))  # last: marks it complete
        self.saved_at = manifest["saved_at"]
        return True

    def discard(self) -> None:
        """A clean exit: nothing to recover. Stops the timer and removes the session folder."""
        self.timer.stop()
        self.lock.unlock()
        shutil.rmtree(self.folder, ignore_errors=True)

    def abandon(self) -> None:
        """What a crash leaves behind: the files stay and the lock is freed (as the process's death frees
        it). For tests that simulate a crash inside one process."""
        self.timer.stop()
        self.lock.unlock()

    def _remove_files(self) -> None:
        for name in (MANIFEST, NET_FILE, SOLVER_FILE, EDITOR_FILE):
            (self.folder / name).unlink(missing_ok=True)
