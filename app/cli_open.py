"""``python main.py PATH [--weights W]``: check the file headless (one line and exit code 2 when it
cannot be read, before any window), then run the editor on it.

``BARISTA_SMOKE=1`` (end-to-end tests) prints the window's title and status line once the file is
open and quits instead of waiting for the user.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from app import models
from app.document import Document
from proto.errors import FormatError, UnknownFieldsError


def check(path: str, weights: str | None = None) -> str | None:
    """Why ``path`` (and ``weights``) cannot be opened, or None. Reading them changes nothing."""
    if not os.path.isfile(path):
        return f"{path}: no such file" if not os.path.exists(path) else f"{path}: not a file"
    try:
        doc = Document()
        models.open_any(doc, path)  # a model's net that is not beside it is rebuilt here, never asked
        if weights:
            models.load_weights_into(doc, weights)
    except FormatError as e:
        if isinstance(e, UnknownFieldsError):
            return None  # the window lists the fields and offers to open without them
        return str(e)
    except OSError as e:
        return f"{e.filename or path}: {e.strerror or e}"
    return None


def run(path: str, weights: str | None = None) -> int:
    from app.main_window import run_app

    if os.environ.get("BARISTA_SMOKE"):
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication

        def report() -> None:
            window: Any = next(w for w in QApplication.topLevelWidgets() if hasattr(w, "doc"))
            status = window.notice.full if window.notice.isVisible() else ""
            print(f"{window.windowTitle()}\n{window.summary.text().strip()}\n{status}", flush=True)
            QApplication.quit()

        QApplication.instance() or QApplication([sys.argv[0]])
        QTimer.singleShot(0, report)
    return run_app([sys.argv[0], path], weights)
