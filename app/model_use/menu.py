"""The Model menu: Classify Image… and Evaluate on Data Set…, each a non-modal dialog on the
window's current net."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

if TYPE_CHECKING:
    from app.model_use.classify_dialog import ClassifyDialog
    from app.model_use.evaluate_dialog import EvaluateDialog


class ModelMenu:
    def __init__(self, window, menu: QMenu) -> None:
        self.window = window
        self.classify_action = QAction("&Classify Image…", window)
        self.classify_action.triggered.connect(self.open_classify)
        self.evaluate_action = QAction("&Evaluate on Data Set…", window)
        self.evaluate_action.triggered.connect(self.open_evaluate)
        menu.addActions([self.classify_action, self.evaluate_action])
        self.classify_dialog: ClassifyDialog | None = None
        self.evaluate_dialog: EvaluateDialog | None = None

    def open_classify(self) -> ClassifyDialog:
        from app.model_use.classify_dialog import ClassifyDialog

        dialog = self.classify_dialog = ClassifyDialog(self.window)
        dialog.show()
        return dialog

    def take_dropped(self, paths: list[str]) -> bool:
        """An image dropped on the window while weights are at hand (a run's snapshot, an opened
        model): Classify Image… on it. False for anything else (the window opens it as a file)."""
        from app.model_use.sources import weight_choices
        from engine.model_use.inputs import is_image_file

        images = [p for p in paths if is_image_file(p)]
        if len(images) != len(paths) or not images:
            return False
        if not any(path for _label, path in weight_choices(self.window)):
            return False
        dialog = self.classify_dialog
        if dialog is None or not dialog.isVisible():
            dialog = self.open_classify()
        dialog.classify(images[0])
        return True

    def open_evaluate(self) -> EvaluateDialog:
        from app.model_use.evaluate_dialog import EvaluateDialog

        dialog = self.evaluate_dialog = EvaluateDialog(self.window)
        dialog.show()
        return dialog
