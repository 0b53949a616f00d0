"""Closing the window while a run trains: one question that names the run, asked while it waits.

The run is paused while the question is on screen (no iteration goes on behind the dialog) and
taken up again on Cancel. Quitting stops it first; it writes a snapshot only when the user ticks
"Snapshot … before it stops" (not Caffe's snapshot_after_train). With unsaved changes the same
question offers Save and Discard; without, Quit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtWidgets import QCheckBox, QMessageBox, QWidget

SAVE, DISCARD, QUIT, CANCEL = "save", "discard", "quit", "cancel"


@dataclass(frozen=True)
class QuitAnswer:
    choice: str  # SAVE, DISCARD, QUIT (nothing unsaved) or CANCEL
    snapshot: bool = False  # write the run's weights and state before it stops


def describe(run: Any) -> str:
    """``"Run 2 is training (iteration 48 of 10,000)"``."""
    return f"{run.name} is training (iteration {run.iter:,} of {run.max_iter:,})"


def ask(parent: QWidget, title: str, file_name: str, run: Any, unsaved: bool) -> QuitAnswer:
    """The question itself (tests replace the window's ``ask_quit_while_training``)."""
    buttons = QMessageBox.StandardButton
    box = QMessageBox(QMessageBox.Icon.Warning, title, "", buttons.NoButton, parent)
    lines = [f"{describe(run)}; it is paused while you choose. Quitting stops it."]
    if unsaved:
        lines.insert(0, f"{file_name} has unsaved changes.")
        lines.append("Save the changes before closing?")
        box.setStandardButtons(buttons.Save | buttons.Discard | buttons.Cancel)
        box.setDefaultButton(buttons.Save)
    else:
        box.setStandardButtons(buttons.Close | buttons.Cancel)
        box.button(buttons.Close).setText("Stop and Quit")
        box.setDefaultButton(buttons.Cancel)
    box.setText("\n".join(lines))
    check = QCheckBox(f"Snapshot {run.name} (weights and solver state) before it stops", box)
    box.setCheckBox(check)
    answer = box.exec()
    choice = {buttons.Save: SAVE, buttons.Discard: DISCARD, buttons.Close: QUIT}.get(answer, CANCEL)
    return QuitAnswer(choice, check.isChecked())


def close_while_training(window: Any, run: Any) -> bool:
    """Ask (the run paused meanwhile); True when the window may close, the run then stopped."""
    controller = window.training.controller
    held = controller.hold()
    answer = _answer(window, run)
    if answer is None:
        if held:
            controller.resume()
        return False
    window.training.shutdown(snapshot=answer.snapshot)
    return True


def _answer(window: Any, run: Any) -> QuitAnswer | None:
    editor = window.editor
    if not editor.commit() and editor.text != window._typed_saved:
        if not window.maybe_save():  # the text that does not parse is settled first, as ever
            return None
        unsaved = False
    else:
        unsaved = window.has_unsaved_work()
    answer = window.ask_quit_while_training(run, unsaved)
    if answer.choice == CANCEL or (answer.choice == SAVE and not window.save()):
        return None
    return answer
