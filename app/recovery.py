"""At start: find the work a crashed window autosaved (``app.autosave``) and offer it back.

A recovered net or solver arrives as an undoable edit on top of the file it came from (or of
an empty document when it was untitled), so the window shows it unsaved and Save writes it
where it belongs. Typing the editor held but the net did not (text that did not parse yet)
goes back into the editor as it was.

A session that cannot be read back (a manifest that is not an object, a ``saved_at`` that is no
time, paths that are not strings, text that is not UTF-8, anything restoring it raises) never
keeps the app from starting: it is moved aside to ``damaged-<session>`` beside the others, kept
for the user, and a notice says where it went. A session only partly whole (an autosaved net that
does not parse, a solver that does not) gives back every part that is whole, the net's text into
the editor as typed, and is moved aside the same way: nothing autosaved is deleted unrecovered.
"""

from __future__ import annotations

import json
import math
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
from proto.inputs import read_regular_text

DAMAGED = "damaged-"


@dataclass
class Recovery:
    folder: Path
    lock: QLockFile  # held by us from discovery until the session is recovered or discarded
    manifest: dict

    def text(self, name: str) -> str | None:
        try:
            return read_regular_text(self.folder / name)
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

    def move_aside(self, reason: str) -> str:
        """Keep the session out of the way under ``damaged-<name>``; returns the notice to show."""
        self.lock.unlock()
        return move_aside(self.folder, reason)


def move_aside(session: Path, reason: str) -> str:
    target = session.with_name(DAMAGED + session.name)
    try:
        (session / "lock").unlink(missing_ok=True)
        os.replace(session, target)
    except OSError as exc:  # it cannot even be moved: remove it, so it cannot stop the next start
        shutil.rmtree(session, ignore_errors=True)
        why = exc.strerror or exc
        return f"A damaged recovery session ({reason}) could not be kept ({why}) and was removed."
    return f"A damaged recovery session ({reason}) was moved aside to {target}."


def manifest_problem(manifest: object) -> str | None:
    """Why a parsed manifest cannot be used, or None when it can."""
    if not isinstance(manifest, dict):
        return f"its manifest is a JSON {type(manifest).__name__}, not an object"
    saved_at = manifest.get("saved_at", 0)
    if isinstance(saved_at, bool) or not isinstance(saved_at, int | float) or not math.isfinite(saved_at):
        return f"its saved_at {str(saved_at)[:40]!r} is not a time"
    try:
        time.localtime(saved_at)
    except (OverflowError, OSError, ValueError):
        return f"its saved_at {str(saved_at)[:40]!r} is not a time"
    for key in ("net_path", "solver_path"):
        if not isinstance(manifest.get(key), str | None):
            return f"its {key} is not a path"
    for key in ("net_dirty", "solver_dirty"):
        if not isinstance(manifest.get(key, False), bool):
            return f"its {key} is not true or false"
    return None


def find_crashed(folder: str | os.PathLike[str], notices: list[str] | None = None) -> list[Recovery]:
    """Sessions in ``folder`` whose window is gone and that hold unsaved work, newest first.

    Empty sessions left behind are removed on the way; damaged ones are moved aside, a notice
    for each appended to ``notices``. Each returned session's lock is held.
    """
    root = Path(folder)
    if not root.is_dir():
        return []
    found = []
    for session in sorted(root.glob("session-*")):
        if session.is_symlink() or not session.is_dir():
            continue  # not one of ours
        lock = make_lock(session)
        if not lock.tryLock(0):
            continue  # a running window owns it
        try:
            raw = read_regular_text(session / MANIFEST)
        except FileNotFoundError:
            lock.unlock()
            shutil.rmtree(session, ignore_errors=True)  # nothing was unsaved there
            continue
        except (OSError, ValueError) as exc:
            lock.unlock()
            _tell(notices, move_aside(session, f"its manifest cannot be read: {exc}"))
            continue
        try:
            manifest = json.loads(raw)
            problem = manifest_problem(manifest)
        except (ValueError, RecursionError) as exc:
            problem = f"its manifest is not JSON: {str(exc)[:80]}"
        if problem is not None:
            lock.unlock()
            _tell(notices, move_aside(session, problem))
            continue
        found.append(Recovery(session, lock, manifest))
    found.sort(key=lambda r: r.manifest.get("saved_at", 0), reverse=True)
    return found


def _tell(notices: list[str] | None, notice: str) -> None:
    if notices is not None:
        notices.append(notice)


def ask_recover(parent: QWidget, recovery: Recovery) -> bool:
    answer = QMessageBox.question(
        parent,
        "Recover unsaved work?",
        f"Barista did not exit cleanly last time.\n\nRecover your unsaved work on {recovery.describe()}?",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Discard,
        QMessageBox.StandardButton.Yes,
    )
    return answer == QMessageBox.StandardButton.Yes


def tell_recovery(parent: QWidget, notice: str) -> None:
    QMessageBox.information(parent, "Recovery", notice)


def restore(window, recovery: Recovery) -> list[str]:
    """Put ``recovery``'s work into ``window`` (a MainWindow) as unsaved, undoable edits, each part on
    its own: a part that cannot be restored never costs the others. Returns what could not be, in
    words (the autosaved copy is named, never the user's own file, which was not read wrong)."""
    doc = window.doc
    net_path, solver_path = recovery.net_path, recovery.solver_path
    problems: list[str] = []
    try:
        if net_path and os.path.isfile(net_path):
            doc.open_net(net_path)
        else:
            doc.load_net(caffe_pb2.NetParameter(), None)
    except (OSError, FormatError):
        doc.load_net(caffe_pb2.NetParameter(), None)  # the original went bad: the autosave still stands
    try:
        if solver_path and os.path.isfile(solver_path):
            doc.open_solver(solver_path)
    except (OSError, FormatError) as e:
        problems.append(f"the solver file could not be opened ({e})")
    net_text, solver_text = recovery.text(NET_FILE), recovery.text(SOLVER_FILE)
    editor_text = recovery.text(EDITOR_FILE)
    wanted = recovery.manifest.get("net_dirty") or doc.net_path is None
    if net_text is not None and wanted and net_text != doc.net_text():
        try:
            command: Command = ReplaceNet.from_text(net_text, _autosaved(recovery, NET_FILE))
            command.text = "Recover autosaved net"
            window.push(command)
        except FormatError as e:
            problems.append(f"the autosaved net does not parse ({e}); its text is back in the editor")
            editor_text = editor_text if editor_text is not None else net_text
    if solver_text is not None and recovery.manifest.get("solver_dirty"):
        try:
            command = ReplaceSolver.from_text(solver_text, _autosaved(recovery, SOLVER_FILE))
            command.text = "Recover autosaved solver"
            window.push(command)
        except FormatError as e:
            problems.append(f"the autosaved solver does not parse ({e})")
    if editor_text is not None:
        window.editor.edit.setPlainText(editor_text)  # parsed (or marked) like any typing
    return problems


def _autosaved(recovery: Recovery, name: str) -> str:
    return str(recovery.folder / name)


def offer(window, folder: str | os.PathLike[str]) -> bool:
    """Offer the newest crashed session (``window.ask_recover``); True when one was restored.

    The answered session is removed either way; older ones wait for the next start.
    """
    notices: list[str] = []
    sessions = find_crashed(folder, notices)
    for notice in notices:
        window.tell_recovery(notice)
    if not sessions:
        return False
    newest, restored = sessions[0], False
    if window.ask_recover(newest):
        try:
            problems = restore(window, newest)
        except Exception as e:  # whatever the session holds, the app must start: keep it aside
            problems = [f"restoring it failed: {type(e).__name__}: {e}"]
        else:
            restored = True
        if problems:  # what could not come back is kept, never deleted
            window.tell_recovery(_partly(restored, problems, newest.move_aside("; ".join(problems))))
            for session in sessions[1:]:
                session.lock.unlock()
            return restored
    newest.discard()
    for session in sessions[1:]:
        session.lock.unlock()
    return restored


def _partly(restored: bool, problems: list[str], kept: str) -> str:
    head = "Recovered what was whole; " if restored else "Nothing could be recovered: "
    return head + "; ".join(problems) + ". " + kept
