"""Help > About: what this is, and the versions of everything it runs on (for bug reports)."""

from __future__ import annotations

import importlib.metadata
import platform
import tomllib
from pathlib import Path

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPushButton, QVBoxLayout, QWidget

APP_VERSION_FALLBACK = "unknown"
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def app_version() -> str:
    """The installed package's version, else pyproject.toml's (a source checkout)."""
    installed = _package_version("barista")
    if installed:
        return installed
    try:
        with open(PYPROJECT, "rb") as f:
            return tomllib.load(f)["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return APP_VERSION_FALLBACK


def versions() -> list[tuple[str, str]]:
    """(component, version) for the app and everything under it; cupy only where installed."""
    import numpy
    from google.protobuf import __version__ as protobuf_version

    rows = [
        ("Barista", app_version()),
        ("Python", f"{platform.python_version()} ({platform.python_implementation()})"),
        ("Qt", qVersion()),
        ("PySide6", pyside_version),
        ("numpy", numpy.__version__),
        ("protobuf", protobuf_version),
    ]
    pyqtgraph = _package_version("pyqtgraph")
    if pyqtgraph:
        rows.append(("pyqtgraph", pyqtgraph))
    cupy = next(
        (v for v in (_package_version(n) for n in ("cupy", "cupy-cuda12x", "cupy-cuda11x")) if v), None
    )
    rows.append(("cupy", cupy or "not installed"))
    rows.append(("Platform", f"{platform.system()} {platform.release()} ({platform.machine()})"))
    return rows


def versions_text() -> str:
    return "\n".join(f"{name}: {version}" for name, version in versions())


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About Barista")
        title = QLabel("<span style='font-size:20px; font-weight:600'>Barista</span>", self)
        blurb = QLabel(
            "Design, inspect and train Caffe networks: draw the net, see it as Caffe will run it, "
            "choose how each weight starts, press Train, watch it learn.",
            self,
        )
        blurb.setWordWrap(True)
        rows = "".join(
            f"<tr><td style='padding-right:14px; color:#8a929c'>{name}</td><td>{version}</td></tr>"
            for name, version in versions()
        )
        self.table = QLabel(f"<table>{rows}</table>", self)
        self.table.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        copy = QPushButton("Copy versions", self)
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(versions_text()))
        buttons.addButton(copy, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(22, 18, 22, 14)
        layout.setSpacing(10)
        layout.addWidget(title)
        layout.addWidget(blurb)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.setMinimumWidth(420)


__all__ = ["AboutDialog", "versions", "versions_text"]
