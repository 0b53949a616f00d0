"""The parts of the main window around the document views: panels, menus and conventions.

``Workbench(window, ...)`` installs the palette and the solver editor (tabs of the right column,
with the prototxt and the initialisation panels), the inspector below them, find/replace in the
prototxt editor, the status-bar totals, New / New from Example / Open Recent, the theme switch,
Help > About, autosave and the remembered layout. The window calls ``closed()`` on a clean exit.
Settings and the recovery folder are handed in: without them (tests, a window made by hand)
nothing is remembered and nothing is autosaved.
"""

from __future__ import annotations

import os
from pathlib import Path

import shiboken6
from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QMainWindow,
    QMenu,
    QTabBar,
)

from app.about import AboutDialog
from app.assumed_shape import AssumedShapeBox, train_assumptions, train_facts
from app.autosave import INTERVAL_MS, Autosave
from app.dataset.layer_data import LayerDataButton
from app.examples import examples, open_example
from app.export_picture import ask_picture_path, export_picture
from app.find_bar import FindBar
from app.help_pages import GETTING_STARTED, HelpPage, shortcuts_html
from app.inspector import Inspector
from app.menus import EditCommands, fill_view_menu
from app.palette import Palette
from app.panel_list import PANELS, TRAINING
from app.panels import Panels, in_menu_order
from app.recent import RecentFiles, fill_menu
from app.recovery import ask_recover, tell_recovery
from app.session import Session
from app.solver_panel import SolverPanel
from app.status_totals import StatusTotals
from app.text_selection import TextSelection
from app.themes import DARK, LIGHT, apply_theme, current_theme
from proto import caffe_pb2
from proto.errors import FormatError

Area = Qt.DockWidgetArea


def new_solver() -> caffe_pb2.SolverParameter:
    """What File > New starts with: plain SGD with momentum, a fixed rate, a short run."""
    return caffe_pb2.SolverParameter(
        base_lr=0.01,
        momentum=0.9,
        weight_decay=0.0005,
        lr_policy="fixed",
        max_iter=1000,
        display=100,
        type="SGD",
    )


class Workbench(QObject):
    def __init__(
        self,
        window,
        settings: QSettings | None = None,
        recovery_dir: str | os.PathLike[str] | None = None,
        autosave_ms: int = INTERVAL_MS,
    ) -> None:
        super().__init__(window)
        self.window = window
        w = window
        # The panels the window docked (app/panel_list.py), and what this workbench adds to them.
        self.palette_dock, self.inspector_dock, self.solver_dock = (
            w.docks[name] for name in ("paletteDock", "inspectorDock", "solverDock")
        )
        self.palette: Palette = self.palette_dock.widget()
        self.inspector: Inspector = self.inspector_dock.widget()
        self.solver_panel: SolverPanel = self.solver_dock.widget()
        self.assumed_shape = AssumedShapeBox(w.graph, w.selection, self.inspector)  # data not here
        self.inspector.add_below_forms(self.assumed_shape)
        self.layer_data = LayerDataButton(w, self.inspector)  # "View Data…" for a data layer's source
        self.inspector.add_below_forms(self.layer_data)
        w.graph.scene.selectionChanged.connect(self._show_generated)  # after the canvas's own handler
        bar = w.statusBar()  # a message cut by the totals beside it is whole on hover
        bar.messageChanged.connect(lambda message: bar.setToolTip(message))
        self.settings = settings

        self.find_bar = FindBar(w.editor.edit, w.editor)
        self.find_bar.searched.connect(w.graph.mark_found)
        self.find_bar.also_found = lambda pattern: boxes_found(w.graph.mark_found(pattern))
        self.text_selection = TextSelection(w.editor, w.selection, self)
        w.editor.layout().insertWidget(0, self.find_bar)
        self.totals = StatusTotals(
            w.doc, w, assumed=lambda: train_assumptions(w.graph), facts=lambda: train_facts(w.graph)
        )
        w.graph.scene.rebuilt.connect(self.totals.schedule)  # a typed shape changes no document
        w.statusBar().addPermanentWidget(self.totals)
        self.recent = RecentFiles(settings, parent=self)
        self._make_menus()

        self.autosave = None
        if recovery_dir is not None:
            self.autosave = Autosave(w.doc, recovery_dir, self._pending_text, autosave_ms, self)
        w.ask_recover = lambda recovery: ask_recover(w, recovery)
        w.tell_recovery = lambda notice: tell_recovery(w, notice)
        self.session = Session(w, settings) if settings is not None else None
        self._shown = False
        self._default_size()
        w.installEventFilter(self)

    # ---- called by the window -----------------------------------------------------------
    def closed(self) -> None:
        """A clean exit: remember the layout; the autosave has nothing left to protect."""
        self.panels.save_training()
        if self.session is not None:
            self.session.save()
        if self.autosave is not None:
            self.autosave.discard()

    def opened(self, path: str | os.PathLike[str]) -> None:
        self.recent.add(path)

    def _show_generated(self) -> None:
        """A Split box alone selected (the Splits view): the inspector says what Caffe added."""
        scene = self.window.graph.scene
        if not shiboken6.isValid(scene) or scene._building:  # (emitted while the window is torn down)
            return
        picked = [item for item in scene.selectedItems() if hasattr(item, "node") and hasattr(item, "index")]
        if len(picked) != 1 or picked[0].node.index is not None:
            if self.inspector._page_key == ("generated",):
                self.inspector.refresh()
            return
        node = picked[0].node
        feeds = sorted({e.dst for e in scene.graph.edges if e.src == node.key})
        blob = node.bottoms[0] if node.bottoms else "?"
        self.inspector.show_generated(
            node.layer,
            f"Caffe inserts this Split because the blob {blob} feeds {len(feeds)} layers "
            f"({', '.join(feeds)}): each gets its own copy, and their gradients add up.",
        )

    # ---- actions ------------------------------------------------------------------------
    def new_document(self) -> None:
        if self.window.maybe_save():
            self.window.doc.load_net(caffe_pb2.NetParameter(name="untitled"), None)
            self.window.doc.load_solver(new_solver(), None)

    def new_from_example(self, path: Path) -> bool:
        if not self.window.maybe_save():
            return False
        try:
            notices = open_example(self.window.doc, path)
        except (OSError, FormatError) as e:
            self.window.show_error("Cannot open the example", str(e))
            return False
        self.window.show_notice("\n".join(notices))
        self.window.statusBar().showMessage(f"New net from the example {path.name}: Save As to keep it", 6000)
        return True

    def open_recent(self, path: str) -> None:
        if self.window.maybe_save() and self.window.open_file(path):
            self.recent.add(path)

    def find(self, replace: bool = False) -> None:
        self.window.editor_dock.show()
        self.window.editor_dock.raise_()
        self.find_bar.open_find(replace)

    def set_dark(self, dark: bool) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_theme(app, DARK if dark else LIGHT)

    def about(self) -> None:
        AboutDialog(self.window).exec()

    def getting_started(self) -> None:
        self.help_page("Getting started", GETTING_STARTED)

    def show_shortcuts(self) -> None:
        self.help_page("Keyboard shortcuts", shortcuts_html(self.window.menuBar()))

    def help_page(self, title: str, body: str) -> None:
        """Shown without blocking (tests read ``self.page``)."""
        self.page = HelpPage(title, body, self.window)
        self.page.show()

    # ---- internals ----------------------------------------------------------------------
    def _pending_text(self) -> str | None:
        editor = self.window.editor
        return editor.text if editor.has_pending_text() else None

    def _menu(self, title: str) -> QMenu:
        for action in self.window.menuBar().actions():
            if action.menu() is not None and action.text().replace("&", "") == title:
                return action.menu()
        return self.window.menuBar().addMenu(f"&{title}")

    def _action(self, text: str, slot, shortcuts=(), checkable: bool = False) -> QAction:
        action = QAction(text, self.window)
        sequences = [QKeySequence(s) for s in shortcuts]
        action.setShortcuts(
            [s for i, s in enumerate(sequences) if not s.isEmpty() and s not in sequences[:i]]
        )
        action.setCheckable(checkable)
        action.triggered.connect(slot)
        return action

    def _make_menus(self) -> None:
        w, keys = self.window, QKeySequence.StandardKey
        self.new_action = self._action("&New", self.new_document, [keys.New])
        self.examples_menu = QMenu("New from &Example", w)
        for example in examples():
            action = self.examples_menu.addAction(example.title)
            action.setToolTip(example.description)
            action.setStatusTip(example.description)
            action.triggered.connect(lambda _checked=False, p=example.path: self.new_from_example(p))
        self.examples_menu.setToolTipsVisible(True)
        self.recent_menu = QMenu("Open &Recent", w)
        self.recent_menu.aboutToShow.connect(
            lambda: fill_menu(self.recent_menu, self.recent, self.open_recent)
        )
        file_menu = self._menu("File")
        file_menu.insertAction(w.open_action, self.new_action)
        file_menu.insertMenu(w.open_action, self.examples_menu)
        file_menu.insertMenu(w.save_action, self.recent_menu)
        file_menu.insertSeparator(w.save_action)
        self.export_picture_action = self._action(
            "Export &Picture…", lambda: export_picture(w), ["Ctrl+Shift+E"]
        )
        self.export_selection_action = self._action(
            "Export Selection as Pi&cture…", lambda: export_picture(w, selection_only=True)
        )
        file_menu.insertActions(w.quit_action, [self.export_picture_action, self.export_selection_action])
        file_menu.insertSeparator(w.quit_action)
        w.ask_picture_path = lambda default: ask_picture_path(w, default)

        self.find_action = self._action("&Find…", lambda: self.find(False), [keys.Find])
        self.replace_action = self._action(
            "Find and &Replace…", lambda: self.find(True), ["Ctrl+H", keys.Replace]
        )
        self.find_next_action = self._action("Find &Next", self.find_bar.find_next, [keys.FindNext])
        self.find_previous_action = self._action(
            "Find Pre&vious", self.find_bar.find_previous, [keys.FindPrevious]
        )
        edit_menu = self._menu("Edit")
        edit_menu.addSeparator()
        self.edit_commands = EditCommands(w, w.graph)
        edit_menu.addActions(self.edit_commands.actions[:5])
        edit_menu.addSeparator()
        edit_menu.addAction(self.edit_commands.actions[5])
        edit_menu.addSeparator()
        edit_menu.addActions(
            [self.find_action, self.replace_action, self.find_next_action, self.find_previous_action]
        )

        self.dark_action = self._action("&Dark Theme", self.set_dark, checkable=True)
        self.full_screen_action = self._action("&Full Screen", self._toggle_full_screen, [keys.FullScreen])
        self.panels = Panels(w, in_menu_order(PANELS, w.docks), self.settings, TRAINING)
        self.view_menu = view_menu = self._menu("View")
        self.view_actions = fill_view_menu(
            view_menu, w, w.graph, self.panels, [self.dark_action, self.full_screen_action]
        )
        view_menu.aboutToShow.connect(self._sync_theme_action)
        self._sync_theme_action()

        help_menu = self._menu("Help")
        self.getting_started_action = self._action("&Getting Started", self.getting_started)
        self.shortcuts_action = self._action("&Keyboard Shortcuts", self.show_shortcuts, ["Ctrl+/"])
        self.about_action = self._action("&About Barista", self.about)
        self.about_action.setMenuRole(QAction.MenuRole.AboutRole)
        help_menu.addActions([self.getting_started_action, self.shortcuts_action])
        help_menu.addSeparator()
        help_menu.addAction(self.about_action)

    def _sync_theme_action(self) -> None:
        app = QApplication.instance()
        self.dark_action.setChecked(isinstance(app, QApplication) and current_theme(app) == DARK)

    def _toggle_full_screen(self) -> None:
        w: QMainWindow = self.window
        w.showNormal() if w.isFullScreen() else w.showFullScreen()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """On first show: the remembered layout, or else the default one for the window's size."""
        if watched is self.window and event.type() == QEvent.Type.Show and not self._shown:
            self._shown = True
            if self.session is None or not self.session.restore():
                self._size_docks()
                QTimer.singleShot(0, self._size_docks)  # again once the window's rows have their heights
            else:
                QTimer.singleShot(0, self._keep_tab_titles_whole)  # a remembered layout may squeeze them
            self.panels.restore_training()
        return False

    def _keep_tab_titles_whole(self) -> None:
        """The right column's upper half at least as tall as its vertical tabs' titles need (a layout
        remembered from a taller window, or dragged small, would elide them: "La…", "Prot…")."""
        w = self.window
        need = tab_titles_height(w) + 12
        below = self.inspector_dock
        if w.editor_dock.isFloating() or below.isFloating() or not below.isVisible():
            return
        group = [w.editor_dock, *w.tabifiedDockWidgets(w.editor_dock)]
        shown = next((d for d in group if d.isVisible() and not d.visibleRegion().isEmpty()), None)
        if shown is None or shown.height() >= need:
            return
        height = shown.height() + below.height()
        w.resizeDocks([shown, below], [need, max(height - need, 0)], Qt.Orientation.Vertical)

    def _default_size(self) -> None:
        """Most of the screen."""
        screen = QGuiApplication.primaryScreen()
        if screen is not None:
            available = screen.availableGeometry()
            self.window.resize(
                min(int(available.width() * 0.9), 1720), min(int(available.height() * 0.9), 1080)
            )

    def _size_docks(self) -> None:
        """The panels at widths that leave the canvas most of the window (over 70% of a 1280-px
        one's width): one tabbed column at the right, ~330 px at 1280 and never below what its
        widest panel needs, its tabs tall enough for every title whole, the inspector below; the
        training dock folded to its bar until Train."""
        w = self.window
        width = w.width()
        group = [w.editor_dock, *w.tabifiedDockWidgets(w.editor_dock)]
        column = max(
            int(min(max(width * 0.26, 330), 520)), *(dock.minimumSizeHint().width() for dock in group)
        )
        w.resizeDocks([w.editor_dock], [column], Qt.Orientation.Horizontal)
        height = w.editor_dock.height() + self.inspector_dock.height()  # the column's (shared in ratio)
        top = max(height * 55 // 100, tab_titles_height(w) + 12)
        w.resizeDocks([w.editor_dock, self.inspector_dock], [top, height - top], Qt.Orientation.Vertical)


def tab_titles_height(window: QMainWindow) -> int:
    """What the right column's vertical tabs need to show every title whole."""
    bars = [bar for bar in window.findChildren(QTabBar) if bar.count() > 1]
    return max((sum(bar.tabSizeHint(i).height() for i in range(bar.count())) for bar in bars), default=0)


def boxes_found(count: int) -> str:
    """What the Find bar adds to its count: the boxes ringed on the canvas, when there are any."""
    return f" · {count} box{'es' * (count != 1)}" if count else ""
