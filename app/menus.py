"""The Edit and View menus as every editor has them, each command with its key shown.

Edit's Cut, Copy, Paste, Select All and Delete act on what has the focus: a text field or the
prototxt text edits its text, otherwise the canvas edits its boxes. Their keys stay with the
focused widget (a text field's Ctrl+C copies text; the canvas binds its own), so the window's
actions carry them for the menu to show, not to steal: they are shortcuts of the window widget
itself, which never holds the focus. View's zoom keys work wherever the focus is.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLineEdit,
    QMainWindow,
    QMenu,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

Keys = QKeySequence.StandardKey
EDIT_COMMANDS = (  # (label, canvas action attribute, text widget method, keys)
    ("Cu&t", "cut_action", "cut", [Keys.Cut]),
    ("&Copy", "copy_action", "copy", [Keys.Copy]),
    ("&Paste", "paste_action", "paste", [Keys.Paste]),
    ("D&uplicate", "duplicate_action", None, ["Ctrl+D"]),
    ("&Delete", "delete_action", "del", [Keys.Delete]),
    ("Select &All", "select_all_action", "selectAll", [Keys.SelectAll]),
)


def text_widget(widget: QWidget | None) -> QWidget | None:
    """The text-editing widget that has the focus (a field, a spin box's field, the prototxt)."""
    if isinstance(widget, QAbstractSpinBox):
        return widget.findChild(QLineEdit)
    if isinstance(widget, QComboBox) and widget.isEditable():
        return widget.lineEdit()
    return widget if isinstance(widget, (QLineEdit, QPlainTextEdit, QTextEdit)) else None


def _text_command(widget: QWidget, method: str) -> None:
    if method == "del":
        if isinstance(widget, QLineEdit):
            widget.del_()
        elif isinstance(widget, (QPlainTextEdit, QTextEdit)):
            widget.textCursor().removeSelectedText()
        return
    getattr(widget, method)()


def shown_only(action: QAction, keys) -> QAction:
    """Give ``action`` its keys for the menu to show, active only while the window itself has the
    focus (never: a child always holds it), so the focused widget keeps them."""
    action.setShortcuts([QKeySequence(k) for k in keys])
    action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
    return action


class EditCommands:
    """Edit's clipboard and selection commands, routed to the focused text or the canvas."""

    def __init__(self, window: QMainWindow, graph) -> None:
        self.window, self.graph = window, graph
        self.actions: list[QAction] = []
        for label, canvas, method, keys in EDIT_COMMANDS:
            action = QAction(label, window)
            action.setObjectName(f"edit_{canvas}")
            action.triggered.connect(lambda _checked=False, c=canvas, m=method: self.run(c, m))
            window.addAction(shown_only(action, keys))
            self.actions.append(action)

    def run(self, canvas: str, method: str | None) -> None:
        text = text_widget(QApplication.focusWidget())
        if text is not None and method is not None:
            _text_command(text, method)
            return
        action = getattr(self.graph, canvas, None)
        if action is not None:
            action.trigger()


def _action(window: QMainWindow, text: str, slot: Callable[[], object], keys=(), tip: str = "") -> QAction:
    action = QAction(text, window)
    action.setShortcuts([QKeySequence(k) for k in keys])
    action.setToolTip(tip or text.replace("&", ""))
    action.triggered.connect(lambda _checked=False: slot())
    window.addAction(action)
    return action


def fill_view_menu(
    menu: QMenu, window: QMainWindow, graph, panels, extra: list[QAction]
) -> dict[str, QAction]:
    """Zoom, the canvas's views (Splits, phase, direction, minimap), the panels, then ``extra``."""
    view = graph.view
    made = {
        "zoom_in": _action(window, "Zoom &In", lambda: view.zoom_by(1.25), [Keys.ZoomIn, "Ctrl+="]),
        "zoom_out": _action(window, "Zoom &Out", lambda: view.zoom_by(0.8), [Keys.ZoomOut]),
        "fit": _action(
            window, "&Fit Net", view.fit, ["Ctrl+0"], "Fit the whole net in view (F on the canvas)"
        ),
        "actual": _action(window, "&Actual Size", view.actual_size, ["Ctrl+1"]),
    }
    menu.addActions(list(made.values()))
    menu.addSeparator()
    bar = graph.toolbar
    bar.splits_action.setShortcut(QKeySequence("Ctrl+Alt+S"))
    bar.train_action.setShortcut(QKeySequence("Ctrl+Alt+1"))
    bar.test_action.setShortcut(QKeySequence("Ctrl+Alt+2"))
    window.addActions([bar.splits_action, bar.train_action, bar.test_action])
    made["downward"] = _action(
        window, "Flow &Top-Down", lambda: bar.direction_action.toggle(), ["Ctrl+Alt+D"]
    )
    made["downward"].setCheckable(True)
    bar.direction_action.toggled.connect(made["downward"].setChecked)
    made["downward"].setChecked(bar.direction_action.isChecked())
    made["minimap"] = _action(window, "&Minimap", lambda: None, ["Ctrl+Alt+M"])
    made["minimap"].setCheckable(True)
    made["minimap"].setChecked(graph.minimap.wanted)
    made["minimap"].toggled.connect(graph.minimap.set_wanted)
    phase = menu.addMenu("&Phase")
    phase.addActions([bar.train_action, bar.test_action])
    menu.addActions([bar.splits_action, made["downward"], made["minimap"]])
    menu.addSeparator()
    panel_menu = menu.addMenu("Pa&nels")
    panel_menu.addActions(panels.toggles)
    menu.addAction(panels.canvas_only_action)
    menu.addSeparator()
    menu.addActions(extra)
    return made


def add_model_menu(window: QMainWindow):
    """Model > Classify Image…, Evaluate on Data Set… (app/model_use), after the Train menu."""
    from app.model_use.menu import ModelMenu

    return ModelMenu(window, window.menuBar().addMenu("&Model"))
