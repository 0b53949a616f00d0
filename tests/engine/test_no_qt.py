"""The engine and proto never import Qt: every module imports with PySide6 made unimportable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import importlib, pkgutil, sys

class NoQt:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6"):
            raise ImportError(f"{name} must not be imported by engine/ or proto/")
        return None

sys.meta_path.insert(0, NoQt())
count = 0
for package in ("proto", "engine"):
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        importlib.import_module(info.name)
        count += 1
print(count)
"""


def test_engine_and_proto_import_without_qt():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 40  # it really walked the packages
