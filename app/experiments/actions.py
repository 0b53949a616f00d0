"""Train > Compare Initialisations… and the same button under the Initialisation tab: one dialog per
window, made on first use and shown again after (its last experiment's curves kept)."""

from __future__ import annotations

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QPushButton

from app.experiments.dialog import CompareInitDialog


class CompareInitActions:
    def __init__(self, window) -> None:
        self.window = window
        self.dialog: CompareInitDialog | None = None
        self.action = QAction("Compare &Initialisations…", window)
        self.action.setToolTip("Train the net under several weight fillers side by side, on the same batches")
        self.action.triggered.connect(lambda _checked=False: self.open_dialog())
        self.button = QPushButton("Compare Initialisations…")
        self.button.setToolTip(self.action.toolTip())
        self.button.clicked.connect(lambda _checked=False: self.open_dialog())

    def install(self) -> None:
        menus = {a.text().replace("&", ""): a.menu() for a in self.window.menuBar().actions()}
        train_menu = menus.get("Train")
        if isinstance(train_menu, QMenu):
            train_menu.addSeparator()
            train_menu.addAction(self.action)
        dock = getattr(self.window, "filler_dock", None)
        panel = dock.widget() if dock is not None else None
        if panel is not None and panel.layout() is not None:
            panel.layout().addWidget(self.button)  # under the Initialisation tab's rows and preview

    def open_dialog(self) -> CompareInitDialog:
        if self.dialog is None:
            self.dialog = CompareInitDialog(self.window.doc, self.window, self.add_runs, self.update_runs)
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    def add_runs(self, runs) -> None:
        self._each_run(runs, "add_run")

    def update_runs(self, runs) -> None:
        self._each_run(runs, "update_run")

    def _each_run(self, runs, method: str) -> None:
        """The training panel's controller's ``method`` on each run (none while there is no panel)."""
        training = getattr(self.window, "training", None)
        if training is None:
            return
        for run in runs:
            getattr(training.controller, method)(run)


def install(window) -> CompareInitActions:
    actions = CompareInitActions(window)
    actions.install()
    return actions
