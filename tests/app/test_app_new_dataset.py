"""File > New Dataset from Images…: the dialog's choices and class counts before writing, the
progress off the GUI thread, Cancel leaving nothing, and Use with This Net as one undo step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableWidgetItem

from app.dataset.dialog import NewDatasetDialog
from proto import caffe_pb2


def make_classes(root: Path, per_class: int, size=(6, 6)) -> None:
    rng = np.random.default_rng(0)
    for name in ("ant", "bee", "cat"):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(root / name / f"{i}.png")


@pytest.fixture
def dialog(qtbot, tmp_path):
    make_classes(tmp_path / "pics", 8)
    d = NewDatasetDialog(use_with_net=lambda folder, classes: None)
    qtbot.addWidget(d)
    d.show()
    return d


def table(d: NewDatasetDialog) -> list[list[str]]:
    columns = range(d.table.columnCount())
    return [
        [(d.table.item(r, c) or QTableWidgetItem()).text() for c in columns]
        for r in range(d.table.rowCount())
    ]


def test_choices_show_the_class_counts_before_anything_is_written(dialog, tmp_path):
    assert not dialog.create_button.isEnabled()
    dialog.folder.setText(str(tmp_path / "pics"))
    assert "Choose where to save" in dialog.summary.text() and not dialog.create_button.isEnabled()
    dialog.output.setText(str(tmp_path / "out"))
    assert table(dialog) == [[name, "8", "6", "2", "0"] for name in ("ant", "bee", "cat")]
    assert dialog.summary.text().startswith("3 classes, 24 images → 6×6×3: train 18, val 6")
    dialog.val_spin.setValue(0)
    dialog.test_spin.setValue(50)
    dialog.colour.setCurrentIndex(1)
    dialog.height_spin.setValue(4)
    dialog.width_spin.setValue(5)
    assert table(dialog)[0] == ["ant", "8", "4", "0", "4"]
    assert "4×5×1" in dialog.summary.text() and dialog.create_button.isEnabled()
    dialog.min_spin.setValue(9)  # every class too small
    assert "no class subfolder with enough images" in dialog.summary.text()
    assert not dialog.create_button.isEnabled()
    dialog.min_spin.setValue(2)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("the user's")
    dialog.refresh()
    assert "already exists and is not a data set" in dialog.summary.text()
    assert not dialog.create_button.isEnabled()
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["notes.txt"]
    dialog.output.setText(str(tmp_path))  # the folder that holds the images
    assert "holds the images" in dialog.summary.text() and not dialog.create_button.isEnabled()


def test_an_existing_data_set_is_replaced_only_after_the_question(
    qtbot, dialog, tmp_path, monkeypatch, modal_dialogs
):
    """--force in the dialog: Create over a data set asks; Cancel keeps the old one untouched,
    Replace writes the new one and removes the old only then."""
    dialog.folder.setText(str(tmp_path / "pics"))
    old = tmp_path / "out"
    old.mkdir()
    (old / "dataset.json").write_text("{}")
    (old / "labels.txt").write_text("old\n")
    dialog.output.setText(str(old))
    assert "already holds a data set: Create asks" in dialog.summary.text()
    assert dialog.create_button.isEnabled()
    dialog.create_button.click()  # the autouse answer: Escape, i.e. Cancel
    assert modal_dialogs == [f"Replace {old}?"] and dialog.worker is None
    assert (old / "labels.txt").read_text() == "old\n"
    from PySide6.QtWidgets import QMessageBox

    def click_replace(box) -> int:
        modal_dialogs.append(box.text())
        next(b for b in box.buttons() if b.text() == "Replace").click()
        return 0

    monkeypatch.setattr(QMessageBox, "exec", click_replace)
    dialog.create_button.click()
    qtbot.waitUntil(lambda: dialog.worker is None, timeout=10000)
    assert dialog.summary.text().startswith(f"Wrote {old}: train 18, val 6")
    assert (old / "labels.txt").read_text() == "ant\nbee\ncat\n"
    assert (old / "train_lmdb" / "data.mdb").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "pics"]  # nothing staged left


def test_create_writes_with_progress_then_offers_use_with_this_net(qtbot, dialog, tmp_path):
    dialog.folder.setText(str(tmp_path / "pics"))
    dialog.output.setText(str(tmp_path / "out"))
    seen: list[int] = []
    dialog.progress.valueChanged.connect(seen.append)
    dialog.create_button.click()
    assert dialog.close_button.text() == "Cancel" and not dialog.create_button.isEnabled()
    qtbot.waitUntil(lambda: dialog.worker is None, timeout=10000)
    assert dialog.summary.text().startswith(f"Wrote {tmp_path / 'out'}: train 18, val 6")
    assert seen[-1] == 24 and dialog.progress.maximum() == 24
    assert (tmp_path / "out" / "train_lmdb" / "data.mdb").exists()
    assert dialog.use_button.isEnabled() and dialog.close_button.text() == "Close"


def test_cancel_leaves_nothing(qtbot, tmp_path):
    make_classes(tmp_path / "pics", 150, size=(4, 4))  # 450 images: progress comes before the end
    d = NewDatasetDialog()
    qtbot.addWidget(d)
    d.folder.setText(str(tmp_path / "pics"))
    d.output.setText(str(tmp_path / "out"))
    d.create_button.click()
    worker = d.worker
    assert worker is not None
    # Cancel as soon as the first batch is reported, from the worker's own thread: no race with the end.
    worker.progress.connect(lambda *args: worker.cancel(), Qt.ConnectionType.DirectConnection)
    qtbot.waitUntil(lambda: d.worker is None, timeout=10000)
    assert d.summary.text() == "Cancelled: nothing was written."
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pics"]
    assert not d.use_button.isEnabled()


def test_the_cancel_button_stops_a_run(qtbot, tmp_path):
    make_classes(tmp_path / "pics", 150, size=(4, 4))
    d = NewDatasetDialog()
    qtbot.addWidget(d)
    d.folder.setText(str(tmp_path / "pics"))
    d.output.setText(str(tmp_path / "out"))
    d.create_button.click()
    d.close_button.click()  # "Cancel" while it runs; it may also have finished: either way nothing half-made
    qtbot.waitUntil(lambda: d.worker is None, timeout=10000)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names in (["pics"], ["out", "pics"])
    if names == ["pics"]:
        assert d.summary.text() == "Cancelled: nothing was written."
    else:
        assert (tmp_path / "out" / "dataset.json").exists()


def test_use_with_this_net_is_one_undo_step(qtbot, lenet_window, tmp_path):
    w = lenet_window
    before = w.doc.net.SerializeToString()
    file_menu = next(a.menu() for a in w.menuBar().actions() if a.text().replace("&", "") == "File")
    assert "New Dataset from Images…" in [a.text().replace("&", "") for a in file_menu.actions()]
    make_classes(tmp_path / "pics", 8, size=(28, 28))  # LeNet's own input size
    d = w.dataset_actions.open_dialog()
    d.folder.setText(str(tmp_path / "pics"))
    d.output.setText(str(tmp_path / "out"))
    d.create_button.click()
    qtbot.waitUntil(lambda: d.use_button.isEnabled(), timeout=10000)
    steps = w.undo_stack.count()
    d.use_button.click()
    assert w.undo_stack.count() == steps + 1
    assert "reads out (3 classes)" in d.summary.text()
    layers = {
        (layer.name, layer.include[0].phase if layer.include else -1): layer for layer in w.doc.net.layer
    }
    train, test = layers[("mnist", caffe_pb2.TRAIN)], layers[("mnist", caffe_pb2.TEST)]
    assert train.data_param.source == str(tmp_path / "out" / "train_lmdb")
    assert test.data_param.source == str(tmp_path / "out" / "val_lmdb")
    assert train.transform_param.mean_file == str(tmp_path / "out" / "mean.binaryproto")
    assert layers[("ip2", -1)].inner_product_param.num_output == 3
    assert layers[("ip1", -1)].inner_product_param.num_output == 500  # only the layer feeding the loss

    def shapes(name: str) -> list:
        return w.graph.scene.graph.shapes[name].tops  # the canvas's shapes, recomputed after the edit

    qtbot.waitUntil(lambda: shapes("ip2") == [(64, 3)] and shapes("mnist")[0] == (64, 3, 28, 28))
    w.undo()
    assert w.doc.net.SerializeToString() == before


def test_dataset_view_counts_thumbnails_pages_and_mean(qtbot, lenet_window, tmp_path):
    make_classes(tmp_path / "pics", 60)  # 45 train images a class: two pages of 40
    (tmp_path / "pics" / "ant" / "extra").mkdir()
    for i in range(30):  # ant gets more: the bars differ
        Image.fromarray(np.zeros((6, 6, 3), np.uint8)).save(tmp_path / "pics" / "ant" / "extra" / f"{i}.png")
    d = NewDatasetDialog()
    qtbot.addWidget(d)
    d.folder.setText(str(tmp_path / "pics"))
    d.output.setText(str(tmp_path / "out"))
    d.create_button.click()
    qtbot.waitUntil(lambda: d.view_button.isEnabled(), timeout=10000)
    view = d.view_dataset()
    assert view is not None
    qtbot.addWidget(view)
    assert [view.split.itemText(i) for i in range(view.split.count())] == ["train_lmdb", "val_lmdb"]
    assert view.bars.bars == [("ant", 68), ("bee", 45), ("cat", 45)]
    assert view.info.text() == "158 images · 3×6×6 (C×H×W)"
    assert view.thumbs.count() == 40 and view.page_label.text() == "page 1 of 2"
    assert not view.prev_button.isEnabled()
    view.next_button.click()
    assert view.thumbs.count() == 28 and view.page_label.text() == "page 2 of 2"
    view.class_box.setCurrentIndex(1)
    assert view.thumbs.count() == 40 and view.page_label.text() == "page 1 of 2"
    view.split.setCurrentIndex(1)
    assert view.bars.bars == [("ant", 22), ("bee", 15), ("cat", 15)]
    mean = view.mean.pixmap()
    assert mean is not None and not mean.isNull()
    w = lenet_window  # and from the File menu, on a folder the user picks
    opened = w.dataset_actions.open_view(str(tmp_path / "out" / "val_lmdb"))
    assert opened is not None and opened.info.text().startswith("52 images")
    assert [label for label, _ in opened.bars.bars] == ["0", "1", "2"]  # an LMDB alone: labels as numbers


def test_new_net_for_this_dataset_opens_a_sized_net_untitled(qtbot, lenet_window, tmp_path):
    w = lenet_window
    make_classes(tmp_path / "pics", 8, size=(32, 32))
    d = w.dataset_actions.open_dialog()
    d.folder.setText(str(tmp_path / "pics"))
    d.output.setText(str(tmp_path / "out"))
    d.create_button.click()
    qtbot.waitUntil(lambda: d.new_net_button.isEnabled(), timeout=10000)
    d.new_net_button.click()
    assert "is open, untitled" in d.summary.text()
    assert w.doc.net.name == "out_cifar10_quick" and w.doc.net_path is None
    assert w.doc.solver.base_lr == pytest.approx(0.001)

    def shapes(name: str) -> list:
        return w.graph.scene.graph.shapes[name].tops

    qtbot.waitUntil(lambda: "ip2" in w.graph.scene.graph.shapes and shapes("ip2") == [(100, 3)])


def drop(w, paths: list[Path]) -> None:
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)  # fmt: skip
    w.dropEvent(event)


def test_dropped_images_or_a_folder_offer_the_dialog(qtbot, lenet_window, tmp_path):
    w = lenet_window
    make_classes(tmp_path / "pics", 8)
    before = w.doc.net.SerializeToString()
    drop(w, [tmp_path / "pics" / "ant" / "0.png", tmp_path / "pics" / "bee" / "1.png"])
    d = w.dataset_actions.dialog
    assert d is not None and d.isVisible()
    assert d.folder.text() == str(tmp_path / "pics") and d.output.text() == str(tmp_path / "pics_dataset")
    assert d.table.rowCount() == 3 and d.create_button.isEnabled()
    d.close()
    drop(w, [tmp_path / "pics"])
    assert w.dataset_actions.dialog is not d and w.dataset_actions.dialog.folder.text() == str(
        tmp_path / "pics"
    )
    assert w.doc.net.SerializeToString() == before  # the net is untouched
