"""Issue 31 case 8: the first launch, with a fresh home folder, shows every shape of the LeNet
example (the bundled MNIST's shapes are facts: 1x28x28 images, the batch from the layer), with no
warning, and "How the net starts" runs; a data source that appears later (Train converted the
bundled MNIST, the user made an LMDB) redraws the canvas from the data without reopening the net."""

from __future__ import annotations

import os

import numpy as np
import pytest
from windows import open_window

from app.files import DEFAULT_SOLVER
from engine.data.lmdb_writer import write_datum_lmdb
from graph_view.wires import BlobLabel


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    """No bundled MNIST made yet, no data root, a working directory without data."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.delenv("BARISTA_DATA_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    return home


def _write_lmdb(path, count=4, shape=(1, 28, 28)) -> None:
    """A few Datums of ``shape``, written beside and moved in whole, as a converter finishes."""
    tmp = path.parent / f".{path.name}.tmp"
    tmp.mkdir(parents=True)
    write_datum_lmdb(tmp, np.zeros((count, *shape), np.uint8), np.arange(count, dtype=np.int32) % 10)
    os.replace(tmp, path)


def _data_warnings(window) -> list[str]:
    problems = window.graph.problems
    return [problems.item(i).text() for i in range(problems.count()) if "LMDB" in problems.item(i).text()]


def test_the_first_screen_shows_every_lenet_shape_without_a_warning(qtbot, fresh_home):
    w = open_window(qtbot, DEFAULT_SOLVER)  # what `make run` opens
    w.graph.sync()
    g = w.graph.scene.graph
    assert not (fresh_home / ".local" / "share" / "barista" / "mnist").exists()  # nothing converted
    for key, shapes in g.shapes.items():
        assert shapes.tops and None not in shapes.tops, (g.layers[key].name, shapes)
    data = next(k for k in g.layers if g.layers[k].name == "mnist")
    assert g.shapes[data].tops == [(64, 1, 28, 28), (64,)]
    assert g.shapes[data].error is None
    assert g.shapes[g.keys_of_index[w.doc.index_of("ip1")]].params == [(500, 800), (500,)]
    assert not _data_warnings(w) and not w.graph.problems.isVisible()
    assert "shapes unknown" not in w.graph.totals.text() and "params" in w.graph.totals.text()
    labels = [i for i in w.graph.scene.items() if isinstance(i, BlobLabel)]
    assert labels and not any(label.assumed for label in labels)  # facts, not guesses
    assert "the bundled MNIST" in w.graph.scene.nodes[data].toolTip()
    totals = w.workbench.totals  # the status bar measures it too, and calls nothing assumed
    qtbot.waitUntil(lambda: totals.totals is not None and totals.totals.params == 431080, timeout=30000)
    assert "assumed" not in totals.text() and "Data not read" not in totals.toolTip()

    fillers = w.filler_dock.widget()  # the Initialisation tab draws conv1's weights, nothing "assumed"
    w.filler_dock.raise_()
    w.selection.select(w.doc.index_of("conv1"))
    qtbot.waitUntil(lambda: fillers.initial is not None and 2 in fillers.initial.blobs, timeout=30000)
    assert fillers.initial.error is None and fillers.initial.shapes(2) == [(20, 1, 5, 5), (20,)]
    assert fillers.assumed_note.isHidden()

    panel = w.net_start_dock.widget()  # "How the net starts" runs on the same shapes
    with qtbot.waitSignal(panel.finished, timeout=30000):
        w.net_start_dock.raise_()
    assert panel.results is not None and all(r.error is None for r in panel.results)
    assert "could not run" not in panel.summary.text()
    assert "synthetic data" in panel.source.text() and "mnist: the bundled MNIST" in panel.source.text()
    w.training.shutdown()


def test_the_bundled_mnist_appearing_redraws_the_canvas_from_the_data(qtbot, fresh_home):
    w = open_window(qtbot, DEFAULT_SOLVER)
    w.graph.sync()
    data = next(k for k in w.graph.scene.graph.layers if w.graph.scene.graph.layers[k].name == "mnist")
    assert w.graph.scene.graph.shapes[data].assumed is not None  # the bundled MNIST's facts
    folder = fresh_home / ".local" / "share" / "barista" / "mnist"
    _write_lmdb(folder / "mnist_train_lmdb")  # as Train's conversion leaves it
    qtbot.waitUntil(lambda: w.graph.scene.graph.shapes[data].assumed is None, timeout=10000)
    assert w.graph.scene.graph.shapes[data].tops == [(64, 1, 28, 28), (64,)]  # now read from it
    assert not _data_warnings(w)
    w.training.shutdown()


NET = """name: "digits"
layer { name: "digits" type: "Data" top: "data" top: "label"
  data_param { source: "digits_lmdb" batch_size: 8 backend: LMDB } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 10 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""


def test_an_lmdb_made_beside_the_net_takes_its_warning_away_without_reopening(qtbot, fresh_home, tmp_path):
    path = tmp_path / "nets" / "digits.prototxt"
    path.parent.mkdir()
    path.write_text(NET)
    w = open_window(qtbot, path)
    w.graph.sync()
    assert _data_warnings(w) and w.graph.problems.isVisible()  # digits_lmdb is not there yet
    assert "shapes unknown" in w.graph.totals.text()
    _write_lmdb(path.parent / "digits_lmdb", shape=(3, 12, 12))
    qtbot.waitUntil(lambda: not _data_warnings(w), timeout=10000)
    g = w.graph.scene.graph
    assert g.shapes[next(k for k in g.layers if g.layers[k].name == "digits")].tops == [(8, 3, 12, 12), (8,)]
    assert "shapes unknown" not in w.graph.totals.text()
    w.training.shutdown()
