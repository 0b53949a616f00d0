"""``main.py compare-init``: the engine's command (engine/cli/compare_init.py), with ``--out X.png``
drawn as the window draws the curves (Qt offscreen, loaded only for a picture)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from engine.cli import compare_init
from engine.experiments.compare_init import CompareInit


def picture(experiment: CompareInit, layers: Sequence[str], relu: Sequence[bool], path: str) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from app.experiments.picture import save_png

    app = QApplication.instance() or QApplication(["main.py compare-init"])  # noqa: F841  (kept while drawing)
    save_png(experiment, layers, relu, path)


def run(args: argparse.Namespace) -> int:
    return compare_init.run(args, picture)
