"""The main window: the document, its one undo stack, the views around it, and the File/Edit menus.

The dialogs the window may raise are methods (``ask_open_path``, ``ask_save_path``,
``ask_unsaved_changes``, ``ask_unparsable_text``, ``ask_net_for_model``, ``ask_drop_unknown_fields``,
``ask_default_solver``, ``ask_changed_on_disk``, ``ask_quit_while_training``, ``ask_train_anyway``,
``show_error``) so tests can replace them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from PySide6.QtCore import QSettings, QSize, Qt
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSizePolicy,
    QStyle,
    QTabWidget,
    QToolButton,
)

from app import (
    commands,
    disk_watch,
    export_actions,
    files,
    menus,
    opening,
    quitting,
    recovery,
    saving,
    train_anyway,
    train_checks,
)
from app.autosave import default_folder as default_recovery_folder
from app.commands import Command
from app.dataset.actions import install as install_dataset_actions
from app.document import Change, Document, Kind
from app.experiments import actions as compare_init
from app.export_picture import default_folder
from app.files import DEFAULT_SOLVER
from app.notice import NoticeLabel
from app.panel_list import PANELS, TRAINING
from app.panels import dock_all
from app.prototxt_editor import PrototxtEditor
from app.selection import Selection
from app.themes import LIGHT, apply_theme
from app.training import TrainingDock
from app.training.job import DEFAULT_SOLVER as DEFAULT_SOLVER_TEXT
from app.trust import TrustGuard
from app.trust_dialog import TrustedFoldersDialog
from app.undo import UndoStack
from app.workbench import INTERVAL_MS, Workbench
from graph_view.editor import GraphEditor
from proto.atomic import write_text_atomic
from proto.errors import FormatError
from proto.textio import parse_solver

APP_NAME = "Barista"
PROTOTXT_FILTER = "Caffe prototxt (*.prototxt *.pt *.txt);;All files (*)"


class MainWindow(QMainWindow):
    def __init__(
        self,
        doc: Document | None = None,
        *,
        settings: QSettings | None = None,
        recovery_dir: str | os.PathLike[str] | None = None,
        autosave_ms: int = INTERVAL_MS,
    ) -> None:
        """``settings`` and ``recovery_dir`` (both off by default) remember the layout and autosave."""
        super().__init__()
        self.doc = doc if doc is not None else Document()
        self.undo_stack = UndoStack(self.doc, self)
        self.selection = Selection(self.doc)
        self.trust = TrustGuard(self.doc, self, settings)  # before any view builds the net

        self.graph = GraphEditor(self.doc, self.push, self.selection, commands.GraphCommands(), self)
        self.setCentralWidget(self.graph)
        self.trust.changed.connect(self.graph.schedule)
        self.editor = PrototxtEditor(self.doc, self.undo_stack.push_command, self)
        # Every panel, docked and tabbed from its one declaration (app/panel_list.py). One column at
        # the right, so the canvas keeps most of a 1280-px window: its tabs down the column's edge
        # (vertical tabs: every title fits whole), the inspector below them; the column runs the
        # window's height and the training dock stays under the canvas.
        self.docks = dock_all(self, PANELS)
        self.editor_dock = self.docks["prototxtDock"]
        self.filler_dock, self.net_start_dock = self.docks["fillerDock"], self.docks["netStartDock"]
        self.training: TrainingDock = self.docks[TRAINING]  # type: ignore[assignment]
        self.training.vet = self._vet_training
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.setCorner(Qt.Corner.TopRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.setTabPosition(Qt.DockWidgetArea.RightDockWidgetArea, QTabWidget.TabPosition.East)

        self.summary = QLabel(self)
        self.statusBar().addPermanentWidget(self.summary)
        self.notice = NoticeLabel(self)  # what opening a file had to say (upgraded, solver found, ...)
        self.statusBar().addWidget(self.notice, 1)
        self._typed_saved: str | None = None  # unparsable text the user chose to save as typed
        self.disk_watch = disk_watch.DiskWatch(self.doc, self._changed_on_disk, self)
        self._make_actions()
        self.setAcceptDrops(True)
        self.resize(1280, 820)
        self.resizeDocks([self.editor_dock], [560], Qt.Orientation.Horizontal)
        self.resizeDocks([self.training], [340], Qt.Orientation.Vertical)
        self.workbench = Workbench(self, settings, recovery_dir, autosave_ms)  # palette, inspector, solver…
        self.doc.changed.connect(self._on_change)
        self.editor.edit.textChanged.connect(lambda: self.setWindowModified(self.has_unsaved_work()))
        self.editor.error_changed.connect(lambda _message: self.setWindowModified(self.has_unsaved_work()))
        self._refresh()

    # ---- editing ------------------------------------------------------------------------
    def push(self, command: Command) -> None:
        """How every view edits the document. Raises CommandError (nothing changes) if invalid.

        Text typed but not yet applied goes in first, so no edit is made against a stale net.
        """
        self.editor.commit()
        self.undo_stack.push_command(command)

    def undo(self) -> None:
        if not self.editor.commit():  # text that does not parse: undo the typing
            self.editor.revert()
            return
        self.undo_stack.undo()

    def redo(self) -> None:
        if not self.editor.commit():
            self.statusBar().showMessage("Fix the prototxt text, or revert it, before redoing", 4000)
            return
        self.undo_stack.redo()

    # ---- files --------------------------------------------------------------------------
    def open_file(self, path: str | os.PathLike[str], weights: str | os.PathLike[str] | None = None) -> bool:
        """Open a net, a solver and its net, or a trained model (and ``weights`` for a net).
        Unsaved changes are not asked about here."""
        if not opening.open_into(self, path, weights):
            return False
        self._typed_saved = None
        self.workbench.opened(path)
        if self.doc.weights:
            self.training.show_model_weights(os.path.basename(self.doc.weights_path or ""), self.doc.weights)
        return True

    def open_dialog(self) -> None:
        path = self.ask_open_path()
        if path and self.maybe_save():
            self.open_file(path)

    def save(self) -> bool:
        """Save the net (and the solver, if it changed) where they came from; Save As if new.

        Text in the Prototxt tab that does not parse is never dropped silently: the user chooses.
        """
        if not self.editor.commit():
            choice = self.ask_unparsable_text(False)
            if choice == saving.TEXT:
                return self._save_typed_text()
            if choice != saving.NET:
                self._keep_editing()
                return False
        return self._save_valid_net()

    def _save_valid_net(self) -> bool:
        if self.doc.net_path is None:
            return self.save_as()
        if not self._may_overwrite():
            return False
        try:
            self.doc.save_net()
            self._save_solver()
        except OSError as e:
            self.show_error("Cannot save", str(e))
            return False
        self.disk_watch.remember()
        self.statusBar().showMessage(f"Saved {os.path.basename(self.doc.net_path)}", 4000)
        self._refresh()
        return True

    def save_as(self) -> bool:
        path = self.ask_save_path()
        if not path:
            return False
        self.editor.commit()
        try:
            self.doc.save_net(path)
            self._save_solver()
        except OSError as e:
            self.show_error("Cannot save", str(e))
            return False
        self.disk_watch.remember()
        self.statusBar().showMessage(f"Saved {os.path.basename(path)}", 4000)
        self.workbench.opened(path)
        self._refresh()
        return True

    def _save_solver(self) -> None:
        """The solver goes with the net: where it came from when it changed; beside the net (naming it)
        when it has no file of its own yet (a default one, an example's)."""
        doc = self.doc
        if doc.solver_path is not None:
            if doc.solver_dirty:
                doc.save_solver()
            return
        if doc.net_path is None or doc.solver.ByteSize() == 0:
            return
        name = os.path.basename(doc.net_path)
        if doc.solver.net != name and not doc.solver.train_net:
            self.undo_stack.push_command(commands.SetSolverField("net", name))
        doc.save_solver(saving.solver_path_beside(doc.net_path))

    def _save_typed_text(self) -> bool:
        path = self.doc.net_path or self.ask_save_path()
        if not path or (path == self.doc.net_path and not self._may_overwrite()):
            return False
        text = self.editor.text
        try:
            write_text_atomic(path, text)
        except OSError as e:
            self.show_error("Cannot save", str(e))
            return False
        self.disk_watch.remember()
        self._typed_saved = text
        self.statusBar().showMessage(
            f"Saved the text as typed to {os.path.basename(path)}: it does not parse yet", 6000
        )
        self._refresh()
        return True

    def _may_overwrite(self) -> bool:
        """Before Save writes the document's files: one changed on disk since it was opened or saved
        (another window, another editor) is not replaced without the user's word."""
        changed = self.disk_watch.changed_files()
        if not changed:
            return True
        answer = self.ask_changed_on_disk(changed, True)
        if answer == disk_watch.KEEP:
            return True
        if answer == disk_watch.RELOAD:
            self._reload()
        elif answer == disk_watch.SAVE_AS:
            self.save_as()
        return False

    def _changed_on_disk(self, paths: list[str]) -> None:
        """The watcher saw a file of ours change: reload it when nothing here is unsaved, else ask."""
        if not self.has_unsaved_work():
            self._reload()
            self.show_notice(f"Reloaded {', '.join(map(os.path.basename, paths))}: it changed on disk")
            return
        answer = self.ask_changed_on_disk(paths, False)
        if answer == disk_watch.RELOAD:
            self._reload()
        elif answer == disk_watch.SAVE_AS:
            self.save_as()
        else:  # keep mine: Save will write it without asking again
            self.disk_watch.accept(paths)

    def _reload(self) -> None:
        path = self.doc.net_path or self.doc.solver_path
        if path and os.path.isfile(path):
            self.open_file(path)
        else:
            self.disk_watch.accept(self.disk_watch.paths())

    def _keep_editing(self) -> None:
        self.editor_dock.show()
        self.editor_dock.raise_()
        self.editor.edit.setFocus()

    def has_unsaved_work(self) -> bool:
        """Something the files do not hold: the document's changes, or typed text not saved as typed."""
        if self.editor.error is not None or self.editor.has_pending_text():
            return self.editor.text != self._typed_saved or self.doc.solver_dirty
        return self.doc.dirty

    def maybe_save(self) -> bool:
        """True when it is fine to drop the current document (saved, discarded, or nothing to lose)."""
        if not self.editor.commit() and self.editor.text != self._typed_saved:
            choice = self.ask_unparsable_text(True)
            if choice == saving.TEXT:
                return self._save_typed_text()
            if choice == saving.NET:
                return not self.doc.dirty or self._save_valid_net()
            if choice != saving.DISCARD:
                self._keep_editing()
            return choice == saving.DISCARD
        if not self.has_unsaved_work():
            return True
        answer = self.ask_unsaved_changes()
        if answer == "save":
            return self.save()
        return answer == "discard"

    def closeEvent(self, event: QCloseEvent) -> None:
        run = self.training.controller.training_run()
        if run is not None:  # one question naming the run, asked while it waits
            closing = quitting.close_while_training(self, run)
        else:
            closing = self.maybe_save()
            if closing:
                self.training.shutdown()
        if closing:
            self.workbench.closed()
            event.accept()
        else:
            event.ignore()

    # ---- dialogs (replaced in tests) --------------------------------------------------------
    def ask_open_path(self) -> str:
        title = "Open a net, a solver or a trained model"
        return QFileDialog.getOpenFileName(self, title, self._folder(), opening.OPEN_FILTER)[0]

    def ask_save_path(self) -> str:
        return QFileDialog.getSaveFileName(self, "Save net as", self._folder(), PROTOTXT_FILTER)[0]

    def ask_unsaved_changes(self) -> str:
        """'save', 'discard' or 'cancel'."""
        buttons = QMessageBox.StandardButton
        answer = QMessageBox.warning(
            self,
            APP_NAME,
            f"{self._file_name()} has unsaved changes.\nSave them before closing?",
            buttons.Save | buttons.Discard | buttons.Cancel,
            buttons.Save,
        )
        return {buttons.Save: "save", buttons.Discard: "discard"}.get(answer, "cancel")

    def ask_quit_while_training(self, run, unsaved: bool) -> quitting.QuitAnswer:
        """Save / Discard (or Stop and Quit) / Cancel, and whether to snapshot the run first."""
        return quitting.ask(self, APP_NAME, self._file_name(), run, unsaved)

    def ask_train_anyway(self, traps: list[str]) -> bool:
        """Train anyway (True) or Cancel, after the traps Train can see are named."""
        return train_anyway.ask(self, traps)

    def ask_unparsable_text(self, closing: bool) -> str:
        """saving.EDIT, TEXT or NET (and DISCARD when ``closing``)."""
        return saving.ask_unparsable_text(self, self.editor.error, closing)

    def ask_changed_on_disk(self, paths: list[str], saving_now: bool) -> str:
        """disk_watch.RELOAD, KEEP, SAVE_AS or CANCEL."""
        return disk_watch.ask(self, paths, saving_now)

    def ask_net_for_model(self, model_path: str) -> str | None:
        return opening.ask_net_for_model(self, model_path)

    def ask_drop_unknown_fields(self, error: FormatError) -> bool:
        return opening.ask_drop_unknown_fields(self, error)

    def ask_default_solver(self) -> bool:
        answer = QMessageBox.question(
            self,
            "No solver",
            "This net has no solver. Train with a default one (SGD, base_lr 0.01, momentum 0.9, "
            "1000 iterations)? It opens in the Solver tab and is saved beside the net on Save.",
        )
        return answer == QMessageBox.StandardButton.Yes

    def show_error(self, title: str, message: str) -> None:
        QMessageBox.critical(self, title, message)

    def show_trusted_folders(self) -> None:
        """File > Trusted Folders…: the folders whose Python layers run, to take any back."""
        dialog = TrustedFoldersDialog(self.trust.folders, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()

    def show_notice(self, text: str) -> None:
        """A lasting line in the status bar (until the next file opens), whole in its tooltip;
        empty hides it."""
        self.notice.show_notice(text)

    # ---- drag and drop a file -----------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        """A file dropped opens as File > Open would; a model dropped with its net opens both."""
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if self.model_menu.take_dropped(paths):  # an image, while a model is loaded: classified
            event.acceptProposedAction()
            return
        if self.dataset_actions.offer_for(paths):  # a folder or images: File > New Dataset from Images…
            event.acceptProposedAction()
            return
        models = [p for p in paths if files.is_model(p)]
        nets = [p for p in paths if not files.is_model(p)]
        if paths and self.maybe_save():
            if nets and models:
                self.open_file(nets[0], models[0])
            else:
                self.open_file(paths[0])
            event.acceptProposedAction()

    # ---- internals ------------------------------------------------------------------------
    def _make_actions(self) -> None:
        style = self.style()
        icon = QStyle.StandardPixmap

        def action(text, slot, shortcuts=(), pixmap=None) -> QAction:
            a = QAction(text, self)
            sequences = [QKeySequence(s) for s in shortcuts]
            a.setShortcuts([s for i, s in enumerate(sequences) if s not in sequences[:i]])
            if pixmap is not None:
                a.setIcon(style.standardIcon(pixmap))
            a.triggered.connect(slot)
            return a

        keys = QKeySequence.StandardKey
        self.open_action = action("&Open…", self.open_dialog, [keys.Open], icon.SP_DialogOpenButton)
        self.save_action = action("&Save", self.save, [keys.Save], icon.SP_DialogSaveButton)
        self.save_as_action = action("Save &As…", self.save_as, [keys.SaveAs])
        self.quit_action = action("&Quit", self.close, [keys.Quit])
        self.trusted_folders_action = action("&Trusted Folders…", self.show_trusted_folders)
        self.undo_action = action("&Undo", self.undo, [keys.Undo], icon.SP_ArrowBack)
        self.redo_action = action("&Redo", self.redo, [keys.Redo, "Ctrl+Shift+Z"], icon.SP_ArrowForward)
        self.undo_action.setIconText("Undo")  # the toolbar keeps short labels; the menu names the edit
        self.redo_action.setIconText("Redo")
        self.undo_stack.undoTextChanged.connect(lambda t: self.undo_action.setText(f"&Undo {t}".rstrip()))
        self.undo_stack.redoTextChanged.connect(lambda t: self.redo_action.setText(f"&Redo {t}".rstrip()))
        self.undo_stack.canUndoChanged.connect(self._update_actions)
        self.undo_stack.canRedoChanged.connect(self._update_actions)
        self.editor.error_changed.connect(lambda _message: self._update_actions())

        file_menu = self.menuBar().addMenu("&File")
        file_menu.addActions([self.open_action, self.save_action, self.save_as_action])
        file_menu.addSeparator()
        file_menu.addAction(self.trusted_folders_action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        edit_menu = self.menuBar().addMenu("&Edit")
        edit_menu.addActions([self.undo_action, self.redo_action])
        self.menuBar().addMenu("&View")  # filled by the workbench (app.menus): zoom, views, panels
        self.menuBar().addMenu("&Train").addActions(self.training.training_actions())

        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setMovable(False)
        toolbar.setIconSize(QSize(18, 18))
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        toolbar.addActions([self.open_action, self.save_action])
        toolbar.addSeparator()
        toolbar.addActions([self.undo_action, self.redo_action])
        toolbar.addSeparator()
        toolbar.addAction(self.training.train_action)
        compact_ones = (self.open_action, self.save_action, self.undo_action, self.redo_action)
        for compact in compact_ones:  # icons, their names on hover: the row keeps room for the canvas's
            button = toolbar.widgetForAction(compact)
            if isinstance(button, QToolButton):
                button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        toolbar.addSeparator()
        # The canvas's buttons and totals on the same row: one toolbar row above the canvas, no footer.
        self.graph.toolbar.embed()
        self.graph.toolbar.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        toolbar.addWidget(self.graph.toolbar)
        self.export_actions = export_actions.install(self)  # File > Export, Train > Train on a Cluster…
        self.dataset_actions = install_dataset_actions(self)  # File > New Dataset from Images…
        self.model_menu = menus.add_model_menu(self)  # Model > Classify Image…, Evaluate on Data Set…
        self.compare_init = compare_init.install(self)  # Train > Compare Initialisations…

    def _update_actions(self) -> None:
        # Undo stays on while the editor holds text that does not parse: it drops that text.
        self.undo_action.setEnabled(self.undo_stack.canUndo() or self.editor.error is not None)
        self.redo_action.setEnabled(self.undo_stack.canRedo())

    def _vet_training(self) -> bool:
        """Before Train: refuse a net with nothing to minimise; offer a default solver; warn of zeros."""
        refusal = train_checks.missing_loss(self.doc.net)
        if refusal is not None:
            self.training.refuse(refusal)
            return False
        if self.doc.solver_path is None and self.doc.solver.ByteSize() == 0:
            if not self.ask_default_solver():
                return False
            solver = parse_solver(DEFAULT_SOLVER_TEXT)
            if self.doc.net_path:
                solver.net = os.path.basename(self.doc.net_path)
            self.undo_stack.push_command(commands.ReplaceSolver(solver, label="Default solver"))
            self.workbench.solver_dock.show()
            self.workbench.solver_dock.raise_()
        warning = train_checks.only_input_data(self.doc.net)
        if warning is not None:
            self.training.console.append_lines([f"Warning: {warning}"], "#b26a00")
            self.statusBar().showMessage(warning, 8000)
        traps = train_checks.traps_before_training(self.doc, self.graph.scene.data_hints)
        if traps and not self.ask_train_anyway(traps):
            return False
        if traps:
            self.training.console.append_lines([f"Warning: {t}" for t in traps], "#b26a00")
        return True

    def _on_change(self, change: Change) -> None:
        if change.kind == Kind.NET_LOADED:  # what opening the last file said is about that file
            self.notice.show_notice("")  # (File > Open says its own again once it has loaded)
        self._refresh()  # the title and the summary: cheap enough for every change

    def _refresh(self) -> None:
        self.setWindowTitle(f"{APP_NAME} — {self._file_name()}[*]")
        self.setWindowModified(self.has_unsaved_work())
        net = self.doc.net
        solver = self._solver_name()
        count = len(net.layer) + len(net.layers)
        self.summary.setText(f"{net.name or 'unnamed net'} · {count} layers · {solver}  ")
        self._update_actions()

    def _solver_name(self) -> str:
        """The solver Train would run: its file, an unsaved one (an example's, a default), or none."""
        if self.doc.solver_path:
            return os.path.basename(self.doc.solver_path)
        return "solver not saved yet" if self.doc.solver.ByteSize() else "no solver"

    def _file_name(self) -> str:
        if self.doc.net_path:
            return os.path.basename(self.doc.net_path)
        return self.doc.title or "untitled.prototxt"

    def _folder(self) -> str:
        """Where Open and Save As start: beside the net (or its solver), else the user's documents."""
        return default_folder(self.doc)


def open_window(
    argv: Sequence[str] = (),
    settings: QSettings | None = None,
    recovery_dir: str | os.PathLike[str] | None = None,
    weights: str | os.PathLike[str] | None = None,
) -> MainWindow:
    """A shown window on ``argv[1]`` (a net, a solver or a model; ``weights`` to start from), or
    on the LeNet example and its solver.

    With a ``recovery_dir``, work a crashed window autosaved there is offered back first.
    """
    window = MainWindow(settings=settings, recovery_dir=recovery_dir)
    if recovery_dir is None or not recovery.offer(window, recovery_dir):
        path = argv[1] if len(argv) > 1 else DEFAULT_SOLVER
        if files.is_model(path):  # its net may have to be asked for: over the window, not before it
            window.show()
        window.open_file(path, weights)
    window.show()
    return window


def run_app(argv: Sequence[str] | None = None, weights: str | None = None) -> int:
    """Run the application until its window closes; ``argv`` as in ``sys.argv``."""
    argv = list(sys.argv if argv is None else argv)
    app = QApplication.instance() or QApplication(argv)
    app.setApplicationName(APP_NAME)
    app.setOrganizationName(APP_NAME)
    apply_theme(app, LIGHT)  # type: ignore[arg-type]  # the remembered theme follows when the window restores its session
    window = open_window(argv, QSettings(), default_recovery_folder(), weights)  # noqa: F841  (kept alive)
    return app.exec()
