"""An ImageData net whose list and images sit beside it, opened while the working directory is
elsewhere: the canvas's shapes, View Data and Train look for ``source`` and ``root_folder`` by one
rule (engine/data/paths.py: the working directory, then beside the net and solver, then the data
root), with a relative or an absolute root_folder; a root_folder that is no folder is one message
naming the layer and the folder in each of the three."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from windows import open_window

from engine.events import RunStatus
from graph_view.wires import BlobLabel
from tests.engine.test_root_folder import HEIGHT, WIDTH, write_folder

TIMEOUT_MS = 60000  # two iterations of a tiny net on a shared 2-core machine
MISSING = "layer 'images' (ImageData): its root_folder 'nowhere/' is not a folder"


@pytest.fixture
def folder(tmp_path, elsewhere) -> Path:
    """``A``, where the net, solver, list and images are; the working directory is elsewhere."""
    (tmp_path / "A").mkdir()
    return tmp_path / "A"


def data_label(window) -> str:
    labels = [i for i in window.graph.scene.items() if isinstance(i, BlobLabel)]
    return next(
        (label.text() for label in labels if label.port.node.key == "images" and label.name == "data"), ""
    )


def view_data(qtbot, window):
    button = window.workbench.layer_data
    window.selection.select(0)
    qtbot.waitUntil(button.isVisible)
    qtbot.mouseClick(button.button, Qt.MouseButton.LeftButton)
    assert button.view is not None and button.view.isVisible()
    return button.view


def train(qtbot, window, until: tuple[RunStatus, ...]):
    window.training.buttons["train"].click()
    run = window.training.controller.current
    assert run is not None
    qtbot.waitUntil(lambda: run.status in until, timeout=TIMEOUT_MS)
    return run


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_canvas_view_data_and_train_find_the_images_beside_the_net(qtbot, folder, absolute):
    write_folder(folder, f"{folder / 'images'}/" if absolute else "images/")
    w = open_window(qtbot, folder / "solver.prototxt", errors_fail=True)
    qtbot.waitUntil(lambda: data_label(w) == f"data  2×3×{HEIGHT}×{WIDTH}")  # from the images, not assumed
    assert not [p for p in w.graph.problems.problems if p.key == "images"]
    view = view_data(qtbot, w)
    assert view.info.text() == f"image list · 4 images · 3×{HEIGHT}×{WIDTH} (C×H×W)"
    assert view.bars.bars == [("0", 2), ("1", 2)] and view.thumbs.count() == 2
    view.close()
    run = train(qtbot, w, (RunStatus.FINISHED, RunStatus.FAILED))
    assert run.status is RunStatus.FINISHED and run.error is None, run.error
    assert run.iter == 2 and len(run.train) >= 2  # the data layer read the images: a loss per iteration
    w.training.shutdown()


def test_a_root_folder_that_is_no_folder_says_so_in_each_place(qtbot, folder):
    write_folder(folder, "nowhere/")
    w = open_window(qtbot, folder / "solver.prototxt", errors_fail=True)
    qtbot.waitUntil(lambda: any(p.key == "images" for p in w.graph.problems.problems))
    problem = next(p for p in w.graph.problems.problems if p.key == "images")
    assert MISSING in problem.message and str(folder) in problem.message
    view = view_data(qtbot, w)
    assert view.info.text().startswith(MISSING) and view.thumbs.count() == 0
    view.close()
    run = train(qtbot, w, (RunStatus.FAILED,))
    assert MISSING in (run.error or "")
    assert html.escape(MISSING) in w.training.error_text.text() and w.training.error.isVisible()
    w.training.shutdown()
