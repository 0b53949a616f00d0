"""The export and cluster actions: File > Export (ONNX, PyTorch module, training package), Train > Train
on a Cluster… and Train > Open Training Log… (a log of `caffe train`, `main.py train` or a package's
train.py, plotted in the training dock as a run). Added to the window's menus by ``install``."""

from __future__ import annotations

import os

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMenu

from app.export_dialog import ExportDialog
from app.training.log_import import LogError, read_run

LOG_FILTER = "Training logs (*.log *.txt *.err);;All files (*)"


class ExportActions:
    def __init__(self, window) -> None:
        self.window = window
        self.dialog: ExportDialog | None = None

        def action(text: str, slot) -> QAction:
            a = QAction(text, window)
            a.triggered.connect(slot)
            return a

        self.onnx_action = action("&ONNX…", lambda: self.open_dialog("onnx"))
        self.torch_action = action("&PyTorch Module…", lambda: self.open_dialog("torch"))
        self.package_action = action("&Training Package…", lambda: self.open_dialog("package"))
        self.cluster_action = action(
            "Train on a &Cluster…", lambda: self.open_dialog("package", cluster=True)
        )
        self.log_action = action("Open Training &Log…", self.open_log)

    def install(self) -> None:
        menus = {a.text().replace("&", ""): a.menu() for a in self.window.menuBar().actions()}
        file_menu, train_menu = menus.get("File"), menus.get("Train")
        if isinstance(file_menu, QMenu):
            export = QMenu("&Export", file_menu)
            export.addActions([self.onnx_action, self.torch_action, self.package_action])
            quit_action = getattr(self.window, "quit_action", None)
            before = quit_action if quit_action in file_menu.actions() else None
            file_menu.insertMenu(before, export) if before else file_menu.addMenu(export)
            if before:
                file_menu.insertSeparator(before)
        if isinstance(train_menu, QMenu):
            train_menu.addSeparator()
            train_menu.addActions([self.cluster_action, self.log_action])

    def open_dialog(self, kind: str, cluster: bool = False) -> ExportDialog:
        self.dialog = ExportDialog(self.window.doc, kind, self.window, cluster=cluster)
        self.dialog.show()
        return self.dialog

    def ask_log_path(self) -> str:
        return QFileDialog.getOpenFileName(self.window, "Open Training Log", "", LOG_FILTER)[0]

    def open_log(self, path: str | None = None) -> bool:
        path = path or self.ask_log_path()
        if not path:
            return False
        controller = self.window.training.controller
        try:
            run = read_run(path, len(controller.runs) + 1)
        except LogError as exc:
            self.window.show_error("Open Training Log", str(exc))
            return False
        dock = self.window.training
        dock.show()
        controller.add_run(run)
        dock.set_expanded(True)  # a folded panel would show nothing of it
        dock.tabs.setCurrentWidget(dock.plots)
        tests = ", ".join(run.tests) or "no test scores"
        self.window.statusBar().showMessage(
            f"Training log {os.path.basename(path)}: {run.iter}/{run.max_iter} iterations ({tests}), "
            f"plotted as {run.name} in the training panel",
            10000,
        )
        return True


def install(window) -> ExportActions:
    actions = ExportActions(window)
    actions.install()
    return actions
