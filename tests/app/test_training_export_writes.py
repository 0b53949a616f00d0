"""The training dock's Export curves (CSV) and Export plot (PNG) write through the one atomic writer
(issue 32 case 2: every writer): a link planted at the name is refused in words and its target left
alone (open(path, "w") and QPixmap.save wrote through it), and a good name is written whole."""

from __future__ import annotations

import os
import shutil

from PySide6.QtGui import QImage
from windows import open_window

from app.files import EXAMPLES

LOG = """I1201 21:00:00.000001 12345 train.py:0] Initializing solver from parameters:
I1201 21:00:00.000002 12345 train.py:0] base_lr: 0.01
I1201 21:00:00.000003 12345 train.py:0] max_iter: 20
I1201 21:00:00.000005 12345 train.py:0] Solving MLP
I1201 21:00:01.000000 12345 train.py:0] Iteration 0 (0 iter/s, 1s/10 iters), loss = 2.3
I1201 21:00:01.000100 12345 train.py:0] Iteration 0, lr = 0.01
I1201 21:00:03.000000 12345 train.py:0] Iteration 20, loss = 0.9
I1201 21:00:03.300000 12345 train.py:0] Optimization Done.
"""


def test_curves_and_plot_refuse_a_planted_link_and_write_a_good_name(qtbot, tmp_path):
    shutil.copy(EXAMPLES / "mlp.prototxt", tmp_path)
    window = open_window(qtbot, tmp_path / "mlp.prototxt")
    try:
        (tmp_path / "run.log").write_text(LOG)
        assert window.export_actions.open_log(str(tmp_path / "run.log"))
        dock = window.training
        dock.set_expanded(True)
        qtbot.waitUntil(lambda: dock.plots.graphics.isVisible() and not dock.plots.graphics.grab().isNull())
        errors: list[tuple[str, str]] = []
        dock.show_export_error = lambda title, message: errors.append((title, message))
        victim = tmp_path / "victim.txt"
        victim.write_text("keep")
        for name in ("c.csv", "p.png"):
            os.symlink(victim, tmp_path / name)
        dock.ask_save_path = lambda title, default, kind: str(
            tmp_path / ("c.csv" if "CSV" in kind else "p.png")
        )
        assert dock.export_csv() is None and dock.export_png() is None
        assert victim.read_text() == "keep"
        assert [title for title, _ in errors] == ["Cannot export the curves", "Cannot export the plot"]
        assert all("symbolic link" in message for _, message in errors), errors
        dock.ask_save_path = lambda title, default, kind: str(
            tmp_path / ("d.csv" if "CSV" in kind else "q.png")
        )
        assert dock.export_csv() == str(tmp_path / "d.csv") and dock.export_png() == str(tmp_path / "q.png")
        assert (tmp_path / "d.csv").read_text().splitlines()[0] == "run,series,iteration,seconds,value"
        assert not QImage(str(tmp_path / "q.png")).isNull()
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    finally:
        window.training.shutdown()
