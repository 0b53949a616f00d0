"""File > New Dataset from Images… and File > View Dataset…, added to the File menu by ``install``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from google.protobuf import text_format
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMenu

from app.commands import CommandError
from app.dataset.dialog import NewDatasetDialog
from app.dataset.use_with_net import use_with_net
from app.dataset.view import DatasetView
from engine.data.class_folders import EXTENSIONS
from engine.data.starter_nets import starter_net
from proto import caffe_pb2


class DatasetActions:
    def __init__(self, window) -> None:
        self.window = window
        self.dialog: NewDatasetDialog | None = None
        self.new_action = QAction("New &Dataset from Images…", window)
        self.new_action.triggered.connect(self.open_dialog)
        self.view_action = QAction("&View Dataset…", window)
        self.view_action.triggered.connect(self.open_view)
        self.view: DatasetView | None = None

    def install(self) -> None:
        for action in self.window.menuBar().actions():
            menu = action.menu()
            if action.text().replace("&", "") == "File" and isinstance(menu, QMenu):
                first = menu.actions()[0] if menu.actions() else None
                for new in (self.new_action, self.view_action):
                    menu.insertAction(first, new) if first else menu.addAction(new)

    def open_dialog(self) -> NewDatasetDialog:
        self.dialog = NewDatasetDialog(self.window, self.use_with_net, self.new_net)
        self.dialog.show()
        return self.dialog

    def offer_for(self, paths: list[str]) -> NewDatasetDialog | None:
        """Dropped folders or images: the New Dataset dialog on the folder of class folders they
        come from (a folder itself; for images, the folder above theirs). None for other files."""
        if not paths:
            return None
        if all(os.path.isdir(p) for p in paths):
            folder = Path(paths[0])
        elif all(os.path.splitext(p)[1].lower() in EXTENSIONS for p in paths):
            folder = Path(paths[0]).parent.parent
        else:
            return None
        dialog = self.open_dialog()
        dialog.folder.setText(str(folder))
        if not dialog.output.text():
            dialog.output.setText(str(folder.parent / f"{folder.name}_dataset"))
        return dialog

    def ask_dataset_folder(self) -> str:
        title = "View Dataset (a data set folder or one LMDB)"
        return QFileDialog.getExistingDirectory(self.window, title, "")

    def open_view(self, path: str | None = None) -> DatasetView | None:
        path = path or self.ask_dataset_folder()
        if not path:
            return None
        self.view = DatasetView(Path(path), self.window)
        self.view.show()
        return self.view

    def new_net(self, folder: Path) -> str | None:
        """Open a starting net and solver sized to the data set, untitled; the reason when not."""
        try:
            summary = json.loads((folder / "dataset.json").read_text("utf-8"))
            height, width = summary["size"]
            net_text, solver_text = starter_net(
                folder, summary["channels"], height, width, len(summary["labels"])
            )
        except (OSError, ValueError, KeyError) as exc:
            return f"cannot read {folder / 'dataset.json'}: {exc}"
        if not self.window.maybe_save():
            return "the open net was kept"
        doc = self.window.doc
        doc.load_net(text_format.Parse(net_text, caffe_pb2.NetParameter()), None, net_text)
        doc.load_solver(text_format.Parse(solver_text, caffe_pb2.SolverParameter()), None, solver_text)
        return None

    def use_with_net(self, folder: Path, classes: int) -> str | None:
        """Point the open net at the data set (one undo step); the reason when it cannot."""
        try:
            self.window.push(use_with_net(self.window.doc.net, folder, classes))
        except CommandError as exc:
            return str(exc)
        return None


def install(window) -> DatasetActions:
    actions = DatasetActions(window)
    actions.install()
    return actions
