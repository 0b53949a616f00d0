"""The README's pictures are made by tools/screenshots.py from the real window: it runs and draws."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

ROOT = Path(__file__).resolve().parents[2]
FAST = ["main_window", "splits", "initialisation", "export"]


def distinct_colours(image: QImage) -> int:
    return len({image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)})


@pytest.mark.slow
def test_the_script_writes_window_pictures_at_1280x800(tmp_path):
    done = subprocess.run(
        [sys.executable, "tools/screenshots.py", str(tmp_path), "--only", *FAST],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    for name in FAST:
        image = QImage(str(tmp_path / f"{name}.png"))
        assert (image.width(), image.height()) == (1280, 800), name
        assert distinct_colours(image) > 50, f"{name}.png is blank"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{name}.png" for name in FAST)


def test_every_picture_the_docs_show_is_one_the_script_makes():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import screenshots
    finally:
        sys.path.pop(0)
    docs = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    shown = {m for doc in docs for m in re.findall(r"images/(\w+)\.png", doc.read_text())}
    assert shown <= set(screenshots.PICTURES), shown - set(screenshots.PICTURES)


def test_help_says_what_no_command_does_and_lists_every_command():
    done = subprocess.run([sys.executable, "main.py", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0
    assert "Without a COMMAND, opens the editor" in done.stdout
    commands = [
        "train",
        "test",
        "time",
        "device_query",
        "splits",
        "upgrade",
        "draw",
        "shapes",
        "fill",
        "export",
        "compare-init",
    ]
    for command in commands:  # each on a line of its own, with its one-line help there or on the next
        assert re.search(rf"^ +{command}(\s+\S|\n)", done.stdout, re.M), command
