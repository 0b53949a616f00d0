"""Syntax colours for prototxt: field names, strings, numbers, enum values, comments, braces.

One pattern with named alternatives, scanned left to right, so a ``#`` inside a string is not a
comment and a word is coloured by where it stands (before ``:`` or ``{`` it is a field name).
QRegularExpression works in the same UTF-16 offsets as ``setFormat``.
"""

from __future__ import annotations

from PySide6.QtCore import QRegularExpression
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument

_PATTERN = QRegularExpression(
    r"""(?<comment>\#.*)"""
    r"""|(?<string>"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)"""
    r"""|(?<section>[A-Za-z_]\w*(?=\s*[{<]))"""
    r"""|(?<field>[A-Za-z_]\w*(?=\s*:))"""
    r"""|(?<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fF]?\b|-?\b(?:inf|nan)\b)"""
    r"""|(?<enum>\b[A-Za-z_]\w*\b)"""
    r"""|(?<brace>[{}<>\[\]])"""
)

# Readable on the light editor background; enum covers true/false too. _DARK: the same on a dark one.
_COLOURS = {
    "comment": "#7b8794",
    "string": "#b5481c",
    "section": "#1d4f91",
    "field": "#2563a8",
    "number": "#0f7b6c",
    "enum": "#8a3fb3",
    "brace": "#8c96a3",
}
_DARK = {
    "comment": "#7f8792",
    "string": "#f0a37a",
    "section": "#7fb0ff",
    "field": "#8cc4ff",
    "number": "#5fd3bc",
    "enum": "#d19cf0",
    "brace": "#8c96a3",
}


def _format(kind: str, dark: bool = False) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor((_DARK if dark else _COLOURS)[kind]))
    if kind == "comment":
        fmt.setFontItalic(True)
    if kind in ("section", "brace"):
        fmt.setFontWeight(QFont.Weight.DemiBold)
    return fmt


class PrototxtHighlighter(QSyntaxHighlighter):
    KINDS = tuple(_COLOURS)

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._formats = {kind: _format(kind) for kind in self.KINDS}
        self.dark = False

    def set_dark(self, dark: bool) -> None:
        """Colours for a dark editor background (or back to the light ones); re-colours the text."""
        if dark == self.dark:
            return
        self.dark = dark
        self._formats = {kind: _format(kind, dark) for kind in self.KINDS}
        self.rehighlight()

    def colour(self, kind: str) -> QColor:
        return self._formats[kind].foreground().color()

    def kind_at(self, text: str, position: int) -> str | None:
        """Which kind of token covers ``position`` in a line of ``text`` (for tests and tooltips)."""
        for kind, start, length in self.tokens(text):
            if start <= position < start + length:
                return kind
        return None

    def tokens(self, text: str):
        matches = _PATTERN.globalMatch(text)
        while matches.hasNext():
            match = matches.next()
            for kind in self.KINDS:
                start = match.capturedStart(kind)
                if start >= 0:
                    yield kind, start, match.capturedLength(kind)
                    break

    def highlightBlock(self, text: str) -> None:
        for kind, start, length in self.tokens(text):
            self.setFormat(start, length, self._formats[kind])
