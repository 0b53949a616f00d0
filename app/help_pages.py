"""Help > Keyboard Shortcuts (read from the menus themselves, so it never goes stale) and
Help > Getting Started (one short page: the five things to know)."""

from __future__ import annotations

import html

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QMenu, QMenuBar, QTextBrowser, QVBoxLayout, QWidget

CANVAS_KEYS = (
    ("F", "Fit the whole net in view"),
    ("F2", "Rename the selected box"),
    ("Wheel / Ctrl+wheel", "Zoom at the cursor"),
    ("Middle drag, Space+drag", "Pan"),
    ("Drag from a port", "Wire a top to a bottom"),
    ("Double-click a wire label", "Rename its blob"),
)

GETTING_STARTED = """
<h3>Getting started</h3>
<ol>
<li><b>Open</b> a prototxt (Ctrl+O), or start from <b>File &gt; New from Example</b>.
 The canvas, the <b>Prototxt</b> text and the <b>Inspector</b> are three views of one net:
 select a box and its text is highlighted; put the caret in a layer's text and its box is selected.</li>
<li><b>Build</b>: drag a layer type from the <b>Layers</b> tab (right) onto the canvas, drag from a
 box's top port to another box to wire it, double-click a name to rename it. Every edit is one
 Ctrl+Z away.</li>
<li><b>Check</b>: a badge on a box names a problem; the <b>Problems</b> list under the canvas holds
 every message whole. <b>Splits</b> shows the net as Caffe runs it; <b>TRAIN/TEST</b> switches phase.</li>
<li><b>Initialise</b>: the <b>Initialisation</b> tab previews each weight's filler;
 <b>How the net starts</b> compares two initialisations on one batch.</li>
<li><b>Train</b> (F5): a copy of the net trains in the background;
 the Training panel unfolds with live curves.</li>
</ol>
<p>F12 hides every panel (and brings them back); Alt+1... shows or hides one.
 <b>File &gt; Export Picture</b> writes the net (or the selection) as PNG or SVG.</p>
"""


def menu_shortcuts(bar: QMenuBar) -> list[tuple[str, str, str]]:
    """(menu, command, keys) of every menu command that has keys, in menu order."""
    rows: list[tuple[str, str, str]] = []

    def walk(title: str, actions: list[QAction]) -> None:
        for action in actions:
            sub = action.menu()
            if isinstance(sub, QMenu):
                walk(f"{title} > {action.text().replace('&', '')}", sub.actions())
            elif not action.isSeparator() and action.shortcuts():
                keys = ", ".join(
                    s.toString(QKeySequence.SequenceFormat.NativeText) for s in action.shortcuts()
                )
                rows.append((title, action.text().replace("&", "").split("\t")[0], keys))

    for top in bar.actions():
        menu = top.menu()
        if isinstance(menu, QMenu):
            walk(top.text().replace("&", ""), menu.actions())
    return rows


def shortcuts_html(bar: QMenuBar) -> str:
    cells = "".join(
        f"<tr><td>{html.escape(menu)}</td><td>{html.escape(name)}</td><td><b>{html.escape(keys)}</b></td></tr>"
        for menu, name, keys in menu_shortcuts(bar)
    )
    canvas = "".join(
        f"<tr><td>Canvas</td><td>{html.escape(what)}</td><td><b>{html.escape(keys)}</b></td></tr>"
        for keys, what in CANVAS_KEYS
    )
    return f"<h3>Keyboard shortcuts</h3><table cellpadding='3'>{cells}{canvas}</table>"


class HelpPage(QDialog):
    def __init__(self, title: str, body: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.text = QTextBrowser(self)
        self.text.setObjectName("helpText")
        self.text.setOpenExternalLinks(False)
        self.text.setHtml(body)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
        self.resize(560, 520)
