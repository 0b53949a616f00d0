"""At start: find the work a crashed window autosaved (``app.autosave``) and offer it back.

A recovered net or solver arrives as an undoable edit on top of the file it came from (or of
an empty document when it was untitled), so the window shows it unsaved and Save writes it
where it belongs. Typing the editor held but the net did not (text that did not parse yet)
goes back into the editor as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QLockFile
from PySide6.QtWidgets import QMessageBox, QWidget

from app.autosave import EDITOR_FILE, MANIFEST, NET_FILE, SOLVER_FILE, make_lock
from app.commands import Command, ReplaceNet, ReplaceSolver
from proto import caffe_pb2
from proto.errors import FormatError


@dataclass
class Recovery:
    folder: Path
    lock: QLockFile  # held by us from discovery until the session is recovered or discarded
    manifest: dict

    def text(self, name: str) -> str | None:
        try:
            return (self.folder / name).read_text(encoding="utf-8")
        except OSError:
            return None

    @property
    def net_path(self) -> str | None:
        return self.manifest.get("net_path")

    @property
    def solver_path(self) -> str | None:
        return self.manifest.get("solver_path")

    def describe(self) -> str:
        name = os.path.basename(self.net_path) if self.net_path else "an untitled net"
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.manifest.get("saved_at", 0)))
        return f"{name}, autosaved {when}"

    def discard(self) -> None:
        self.lock.unlock()
        shutil.rmtree(self.folder, ignore_errors=True)


def find_crashed(folder: str | os.PathLike[str]) -> list[Recovery]:
    """Sessions in ``folder`` whose window is gone and that hold unsaved work, newest first.

    Empty sessions left behind are removed on the way. Each returned session's lock is held.
    """
    root = Path(folder)
    if not root.is_dir():
        return []
    found = []
    for session in sorted(root.glob("session-*")):
        lock = make_lock(session)
        if not lock.tryLock(0):
            continue  # a running window owns it
        try:
            manifest = json.loads((session / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            lock.unlock()
            shutil.rmtree(session, ignore_errors=True)  # nothing was unsaved there
            continue
        found.append(Recovery(session, lock, manifest))
    found.sort(key=lambda r: r.manifest.get("saved_at", 0), reverse=True)
    return found


def ask_recover(parent: QWidget, recovery: Recovery) -> bool:
    answer = QMessageBox.question(
        parent,
        "Recover unsaved work?",
        f"Barista did not exit cleanly last time.\n\nRecover your unsaved work on {recovery.describe()}?",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Discard,
        QMessageBox.StandardButton.Yes,
    )
    return answer == QMessageBox.StandardButton.Yes


def restore(window, recovery: Recovery) -> None:
    """Put ``recovery``'s work into ``window`` (a MainWindow) as unsaved, undoable edits."""
    doc = window.doc
    net_path, solver_path = recovery.net_path, recovery.solver_path
    try:
        if net_path and os.path.isfile(net_path):
            doc.open_net(net_path)
        else:
            doc.load_net(caffe_pb2.NetParameter(), None)
        if solver_path and os.path.isfile(solver_path):
            doc.open_solver(solver_path)
    except (OSError, FormatError):
        doc.load_net(caffe_pb2.NetParameter(), None)  # the original went bad: the autosave still stands
    net_text, solver_text = recovery.text(NET_FILE), recovery.text(SOLVER_FILE)
    wanted = recovery.manifest.get("net_dirty") or doc.net_path is None
    if net_text is not None and wanted and net_text != doc.net_text():
        command: Command = ReplaceNet.from_text(net_text, net_path or "<recovered>")
        command.text = "Recover autosaved net"
        window.push(command)
    if solver_text is not None and recovery.manifest.get("solver_dirty"):
        command = ReplaceSolver.from_text(solver_text, solver_path or "<recovered>")
        command.text = "Recover autosaved solver"
        window.push(command)
    editor_text = recovery.text(EDITOR_FILE)
    if editor_text is not None:
        window.editor.edit.setPlainText(editor_text)  # parsed (or marked) like any typing


def offer(window, folder: str | os.PathLike[str]) -> bool:
    """Offer the newest crashed session (``window.ask_recover``); True when one was restored.

    The answered session is removed either way; older ones wait for the next start.
    """
    sessions = find_crashed(folder)
    if not sessions:
        return False
    newest, restored = sessions[0], False
    if window.ask_recover(newest):
        try:
            restore(window, newest)
            restored = True
        except (OSError, FormatError) as e:
            window.show_error("Cannot recover", str(e))
    newest.discard()
    for session in sessions[1:]:
        session.lock.unlock()
    return restored
