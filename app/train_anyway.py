"""The question Train asks before the traps it can see (app/train_checks.py): Train anyway, or Cancel."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

TRAIN_ANYWAY = "Train anyway"


def ask(parent: QWidget, traps: list[str]) -> bool:
    """True for Train anyway. Each trap is one paragraph; Cancel is the default."""
    box = QMessageBox(
        QMessageBox.Icon.Warning, "Before training", "", QMessageBox.StandardButton.Cancel, parent
    )
    many = len(traps) > 1
    box.setText(f"{'These' if many else 'This'} will likely keep the net from learning:")
    box.setInformativeText("\n\n".join(f"• {t}" for t in traps))
    anyway = box.addButton(TRAIN_ANYWAY, QMessageBox.ButtonRole.AcceptRole)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return box.clickedButton() is anyway
