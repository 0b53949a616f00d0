"""The canvas's own colours (background, grid dots, wire labels), following the application palette.

A light palette keeps ``style``'s light colours; a dark one (a dark Window role) takes them from the
palette, so the canvas follows whatever theme the host application sets without graph_view knowing it.
Boxes keep their family colours on either.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QGuiApplication, QPalette

from graph_view import style


def is_dark(palette: QPalette | None = None) -> bool:
    palette = palette or QGuiApplication.palette()
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def background() -> QColor:
    palette = QGuiApplication.palette()
    return palette.color(QPalette.ColorRole.Base) if is_dark(palette) else QColor(style.BACKGROUND)


def grid() -> QColor:
    palette = QGuiApplication.palette()
    return palette.color(QPalette.ColorRole.Mid).lighter(125) if is_dark(palette) else QColor(style.GRID)


def text() -> QColor:
    palette = QGuiApplication.palette()
    return palette.color(QPalette.ColorRole.Text) if is_dark(palette) else QColor(style.TEXT)


def muted() -> QColor:
    palette = QGuiApplication.palette()
    return palette.color(QPalette.ColorRole.PlaceholderText) if is_dark(palette) else QColor(style.MUTED)


def label_background() -> QColor:
    colour = background()
    colour.setAlpha(230)
    return colour
