"""Light and dark themes: a Fusion palette and one stylesheet written against named colours.

``apply_theme(app, "dark")`` sets both on the QApplication; every widget gets a PaletteChange
event, so a widget that paints with palette roles follows by itself. The stylesheet styles this
package's panels by object name (forms, the inspector card, the palette list, the filler panels)
and the dock and tool bars, nothing more, so a colleague's widget keeps its own look.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

LIGHT, DARK = "light", "dark"
THEMES = (LIGHT, DARK)

_COLOURS = {
    LIGHT: {
        "window": "#f4f5f7",
        "base": "#ffffff",
        "alt": "#f7f8fa",
        "text": "#1f2328",
        "muted": "#8a929c",
        "border": "#dfe2e6",
        "button": "#f6f7f9",
        "accent": "#2f6fde",
        "accent_text": "#ffffff",
        "section": "#eef0f3",
        "hover": "#e8ebef",
        "danger_bg": "#fdecea",
        "danger": "#b42318",
        "tooltip": "#ffffff",
        "link": "#2f6fde",
        "page": "#ffffff",
        "hint": "#5f6773",
        "card": "#f7f8fa",
        "card_border": "#e3e6eb",
        "current_bg": "#eef4fc",
        "current_border": "#9bbce6",
        "note_bg": "#f3f4f6",
        "warn_bg": "#fff6dc",
        "warn_border": "#e0a800",
        "warn": "#5b4300",
        "busy": "#b45309",
    },
    DARK: {
        "window": "#202227",
        "base": "#17191d",
        "alt": "#1c1e22",
        "text": "#dfe2e7",
        "muted": "#7f8792",
        "border": "#33363d",
        "button": "#2a2d33",
        "accent": "#4c8dff",
        "accent_text": "#ffffff",
        "section": "#2a2d33",
        "hover": "#32363d",
        "danger_bg": "#3a2020",
        "danger": "#ff8a80",
        "tooltip": "#2a2d33",
        "link": "#7fb0ff",
        "page": "#24272c",
        "hint": "#a3abb6",
        "card": "#24272c",
        "card_border": "#383c44",
        "current_bg": "#1e2a3b",
        "current_border": "#3f6db0",
        "note_bg": "#26292f",
        "warn_bg": "#3a3220",
        "warn_border": "#c99a10",
        "warn": "#f1d68c",
        "busy": "#f0a35a",
    },
}

_QSS = """
QMainWindow::separator {{ background: {border}; width: 1px; height: 1px; }}
QDockWidget {{ titlebar-close-icon: none; }}
QDockWidget::title {{ background: {window}; padding: 6px 8px; border-bottom: 1px solid {border};
    font-weight: 600; text-align: left; }}
QToolBar#mainToolbar {{ background: {window}; border: none; border-bottom: 1px solid {border}; spacing: 2px;
    padding: 2px 6px; }}
QStatusBar {{ background: {window}; border-top: 1px solid {border}; color: {muted}; }}
QStatusBar QLabel {{ color: {muted}; padding: 0 6px; }}
QTabBar::tab {{ padding: 5px 12px; border: none; background: transparent; color: {muted}; }}
QTabBar::tab:selected {{ color: {text}; border-bottom: 2px solid {accent}; }}
QTabBar::tab:hover {{ color: {text}; }}
QToolTip {{ background: {tooltip}; color: {text}; border: 1px solid {border}; padding: 4px; }}

#inspectorPage, #solverPage {{ background: {page}; }}
#inspectorHeader {{ background: {page}; border-bottom: 1px solid {border}; min-height: 52px; }}
#inspectorTitle {{ font-size: 15px; font-weight: 600; }}
#inspectorSubtitle {{ color: {muted}; }}
#inspectorNote {{ color: {muted}; font-style: italic; }}
#phaseBadge {{ background: {section}; border: 1px solid {border}; border-radius: 9px; padding: 1px 8px;
    color: {text}; font-size: 11px; }}
#inspectorMessage {{ background: {danger_bg}; color: {danger}; padding: 7px 12px;
    border-bottom: 1px solid {border}; }}

QToolButton#sectionHeader {{ font-weight: 600; text-align: left; padding: 5px 4px; border: none;
    border-bottom: 1px solid {border}; border-radius: 0; background: transparent; }}
QToolButton#groupHeader {{ text-align: left; padding: 2px 2px; border: none; background: transparent; }}
QToolButton#groupHeader[unset="true"] {{ color: {muted}; }}
QToolButton#sectionHeader:hover, QToolButton#groupHeader:hover {{ color: {accent}; }}
#groupBody {{ border-left: 1px solid {border}; margin-left: 7px; }}
QLabel#groupSummary {{ color: {muted}; padding-right: 2px; }}
QLabel#fieldLabel {{ color: {text}; font-weight: 600; }}
QLabel#fieldLabel[unset="true"] {{ color: {muted}; font-weight: normal; }}
QToolButton#formAddButton, QToolButton#formMoreButton {{ color: {link}; border: none; padding: 1px 2px; }}
QToolButton#formAddButton:hover, QToolButton#formMoreButton:hover {{ text-decoration: underline; }}
QToolButton#formResetButton, QToolButton#formRemoveButton {{ color: {muted}; border: none; padding: 0 3px; }}
QToolButton#formResetButton:hover, QToolButton#formRemoveButton:hover {{ color: {danger}; }}

#paletteSearch {{ border: 1px solid {border}; border-radius: 6px; padding: 5px 8px; background: {base}; }}
#paletteSearch:focus {{ border-color: {accent}; }}
QTreeWidget#paletteTree {{ border: none; background: {base}; outline: 0; }}
QTreeWidget#paletteTree::item {{ padding: 3px 2px; border-radius: 4px; }}
QTreeWidget#paletteTree::item:hover {{ background: {hover}; }}
QTreeWidget#paletteTree::item:selected {{ background: {accent}; color: {accent_text}; }}
#paletteHint {{ color: {muted}; padding: 4px 8px 6px 8px; font-size: 11px; }}

#findBar {{ background: {window}; border-bottom: 1px solid {border}; }}
#findBar QLineEdit {{ border: 1px solid {border}; border-radius: 4px; padding: 3px 6px; background: {base}; }}
#findBar QLineEdit[notFound="true"] {{ background: {danger_bg}; }}
#findCount {{ color: {muted}; min-width: 64px; }}

#solverPlotTitle {{ font-weight: 600; }}
#solverPlotNote {{ color: {muted}; }}
#solverPlotNote[error="true"] {{ color: {danger}; }}

#fillerPanel #fillerRow {{ background: {card}; border: 1px solid {card_border}; border-radius: 6px; }}
#fillerPanel #fillerRow[current="true"] {{ background: {current_bg}; border-color: {current_border}; }}
#fillerPanel #shapeLabel {{ color: {text}; font-family: monospace; }}
#fillerPanel #hintLabel, #fillerPanel #kernelCaption, #fillerPanel #kernelLegend, #fillerPanel #fillFooter
    {{ color: {hint}; }}
#fillerPanel #panelTitle, #fillerPanel #previewTitle {{ font-weight: 600; color: {text}; }}
#fillerPanel #previewMessage {{ color: {text}; padding: 8px; background: {note_bg}; border-radius: 6px; }}
#fillerPanel #previewWarnings {{ background: {warn_bg}; border-left: 3px solid {warn_border};
    padding: 6px 8px; color: {warn}; }}
#fillerPanel #fillerRule {{ color: {border}; }}
#fillerPanel #busyLabel, #netStartPanel #busyLabel {{ color: {busy}; }}
#netStartPanel #netStartIntro, #netStartPanel #netStartSource {{ color: {hint}; }}
"""


def palette_for(theme: str) -> QPalette:
    c = _COLOURS[theme]
    palette = QPalette()
    role, group = QPalette.ColorRole, QPalette.ColorGroup
    for r, key in (
        (role.Window, "window"),
        (role.WindowText, "text"),
        (role.Base, "base"),
        (role.AlternateBase, "alt"),
        (role.Text, "text"),
        (role.Button, "button"),
        (role.ButtonText, "text"),
        (role.ToolTipBase, "tooltip"),
        (role.ToolTipText, "text"),
        (role.Highlight, "accent"),
        (role.HighlightedText, "accent_text"),
        (role.Link, "link"),
        (role.PlaceholderText, "muted"),
        (role.Mid, "border"),
    ):
        palette.setColor(r, QColor(c[key]))
    palette.setColor(role.BrightText, QColor(c["danger"]))
    for r in (role.Text, role.WindowText, role.ButtonText):
        palette.setColor(group.Disabled, r, QColor(c["muted"]))
    if theme == DARK:
        palette.setColor(role.Light, QColor("#3a3e46"))
        palette.setColor(role.Midlight, QColor("#30333a"))
        palette.setColor(role.Dark, QColor("#121316"))
        palette.setColor(role.Shadow, QColor("#000000"))
    return palette


def stylesheet_for(theme: str) -> str:
    return _QSS.format(**_COLOURS[theme])


def colour(theme: str, name: str) -> str:
    """A named colour of ``theme`` (``muted``, ``accent``, ...), for widgets that paint themselves."""
    return _COLOURS[theme][name]


def apply_theme(app: QApplication, theme: str) -> None:
    if theme not in THEMES:
        theme = LIGHT
    if app.style().name().lower() != "fusion":  # each of these re-polishes every widget: only if needed
        app.setStyle("Fusion")
    app.setPalette(palette_for(theme))
    sheet = stylesheet_for(theme)
    if app.styleSheet() != sheet:
        app.setStyleSheet(sheet)
    app.setProperty("baristaTheme", theme)


def current_theme(app: QApplication) -> str:
    return app.property("baristaTheme") or LIGHT
