"""Data made after the net was opened redraws the canvas from it, wherever the net's DataPaths would
find it (engine/data/paths.py): an ImageData root_folder created and filled beside the net, its list
file written there, an LMDB put in the folder above the net. The canvas's watch (graph_view/
data_watch.py) follows the places DataPaths tries, nearest first, and a change elsewhere in those
folders redraws nothing."""

from __future__ import annotations

import os
import shutil

from windows import open_window

from engine.data.paths import DataPaths
from graph_view import data_watch
from tests.app.test_app_root_folder import data_label
from tests.app.test_first_launch_data import NET, _data_warnings, _write_lmdb
from tests.engine.test_root_folder import HEIGHT, WIDTH, write_folder

SHAPE = f"data  2×3×{HEIGHT}×{WIDTH}"  # read from the images, not assumed
WAIT_MS = 15000


def images_problem(window) -> str:
    return next((p.message for p in window.graph.problems.problems if p.key == "images"), "")


def test_a_root_folder_made_and_filled_later_redraws_the_canvas(qtbot, tmp_path, elsewhere):
    folder = tmp_path / "A"
    write_folder(folder, "images/")
    shutil.move(folder / "images", tmp_path / "made-later")
    w = open_window(qtbot, folder / "net.prototxt", errors_fail=True)
    qtbot.waitUntil(lambda: "is not a folder" in images_problem(w))
    assert data_label(w) != SHAPE

    (folder / "images").mkdir()  # the folder first, empty: the images cannot be read yet
    qtbot.waitUntil(lambda: str(folder / "images") in w.graph.data_watch.watched(), timeout=WAIT_MS)
    assert "is not a folder" not in images_problem(w) and data_label(w) != SHAPE
    for picture in sorted((tmp_path / "made-later").iterdir()):
        shutil.copy(picture, folder / "images" / picture.name)
    qtbot.waitUntil(lambda: data_label(w) == SHAPE, timeout=WAIT_MS)
    assert not images_problem(w) and not w.graph.data_watch.watched()  # nothing missing: no watch
    w.training.shutdown()


def test_a_list_file_written_later_beside_the_net_redraws_the_canvas(qtbot, tmp_path, elsewhere):
    folder = tmp_path / "A"
    write_folder(folder, "images/")
    listing = (folder / "list.txt").read_text()
    (folder / "list.txt").unlink()
    w = open_window(qtbot, folder / "net.prototxt", errors_fail=True)
    qtbot.waitUntil(lambda: "list.txt" in images_problem(w))
    (folder / ".list.txt.tmp").write_text(listing)
    os.replace(folder / ".list.txt.tmp", folder / "list.txt")
    qtbot.waitUntil(lambda: data_label(w) == SHAPE, timeout=WAIT_MS)
    assert not images_problem(w)
    w.training.shutdown()


def test_an_lmdb_put_in_the_folder_above_the_net_redraws_the_canvas(qtbot, tmp_path, elsewhere):
    path = tmp_path / "project" / "nets" / "digits.prototxt"
    path.parent.mkdir(parents=True)
    path.write_text(NET)
    w = open_window(qtbot, path)
    w.graph.sync()
    assert _data_warnings(w) and "shapes unknown" in w.graph.totals.text()
    assert str(tmp_path / "project") in w.graph.data_watch.watched()  # DataPaths looks there too

    _write_lmdb(tmp_path / "project" / "digits_lmdb", shape=(3, 12, 12))
    qtbot.waitUntil(lambda: not _data_warnings(w), timeout=WAIT_MS)
    g = w.graph.scene.graph
    assert g.shapes[next(k for k in g.layers if g.layers[k].name == "digits")].tops == [(8, 3, 12, 12), (8,)]
    assert "shapes unknown" not in w.graph.totals.text()
    w.training.shutdown()


def test_the_watch_follows_the_data_paths_order_and_ignores_other_changes(qtbot, tmp_path, elsewhere):
    net = tmp_path / "project" / "nets" / "net.prototxt"
    net.parent.mkdir(parents=True)
    found = DataPaths.beside(net).with_root(tmp_path / "root")
    tries = data_watch.candidates(["db/x_lmdb"], found)
    assert tries[:3] == [
        elsewhere / "db" / "x_lmdb",
        net.parent / "db" / "x_lmdb",
        tmp_path / "project" / "db" / "x_lmdb",
    ]
    assert tries[-2:] == [tmp_path / "root" / "db" / "x_lmdb", tmp_path / "root" / "x_lmdb"]
    assert {os.fspath(p.parent.parent) for p in tries[1:-2]} <= data_watch.places(["db/x_lmdb"], found)

    calls: list[int] = []
    watch = data_watch.DataWatch(lambda: calls.append(1))
    watch._tries = tries
    watch._marks = [data_watch._mark(t) for t in tries]
    (tmp_path / "project" / "notes.txt").write_text("unrelated")  # a change in a watched folder
    watch._changed(str(tmp_path / "project"))
    assert calls == []
    (tmp_path / "project" / "db").mkdir()  # on the way to a source: redraw
    watch._changed(str(tmp_path / "project"))
    assert calls == [1]


def test_a_deep_tree_is_watched_in_a_bounded_number_of_places(tmp_path, elsewhere):
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(100)])
    deep.mkdir(parents=True)
    found = DataPaths.beside(deep / "net.prototxt")
    watched = data_watch.places(["a_lmdb", "b_lmdb", "mean.binaryproto"], found)
    assert len(watched) == data_watch.MAX_PLACES
    assert os.fspath(deep) in watched and os.fspath(elsewhere) in watched  # the nearest kept
