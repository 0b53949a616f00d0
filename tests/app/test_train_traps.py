"""Issue 31 case 3: Train asks before the traps the product can see ("Train anyway" or Cancel):
weights that never break symmetry (as the Initialisation tab warns), TRAIN and TEST data of
different shapes or data sets, naming both layers; the run's "Cannot share param weights ...;
shape mismatch" names the TEST net's data layer as the cause; an ImageData source that is a folder
says what a list file is."""

from __future__ import annotations

import html

import numpy as np
import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from test_training_dock import TIMEOUT_MS
from windows import asked_window

from app.commands import SetLayerField
from app.train_anyway import TRAIN_ANYWAY
from engine.data.lmdb_writer import write_datum_lmdb


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BARISTA_DATA_ROOT", str(tmp_path / "no-data-here"))
    w = asked_window(qtbot)
    yield w
    w.training.shutdown()


def lmdb(path, count: int, shape: tuple[int, ...]) -> None:
    gen = np.random.default_rng(0)
    write_datum_lmdb(path, gen.integers(0, 256, (count, *shape), dtype=np.uint8), np.arange(count) % 2)


def two_phase_net(train_source: str, test_source: str) -> str:
    def data(name: str, phase: str, source: str) -> str:
        return (
            f'layer {{ name: "{name}" type: "Data" top: "data" top: "label" include {{ phase: {phase} }}\n'
            f"  transform_param {{ scale: 0.0039 }}\n"
            f'  data_param {{ source: "{source}" batch_size: 4 backend: LMDB }} }}\n'
        )

    return (
        'name: "two"\n'
        + data("train_data", "TRAIN", train_source)
        + data("test_data", "TEST", test_source)
        + 'layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"\n'
        '  convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } } }\n'
        'layer { name: "ip1" type: "InnerProduct" bottom: "conv1" top: "ip1"\n'
        '  inner_product_param { num_output: 6 weight_filler { type: "xavier" } } }\n'
        'layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }\n'
        'layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"\n'
        '  inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }\n'
        'layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }\n'
    )


SOLVER = """net: "two.prototxt"
test_iter: 1
test_interval: 5
base_lr: 0.01
lr_policy: "fixed"
max_iter: 5
snapshot_after_train: false
"""


def write_pair(folder, train_shape, test_shape, test_folder="") -> object:
    lmdb(folder / "train_lmdb", 8, train_shape)
    (folder / test_folder).mkdir(exist_ok=True)
    lmdb(folder / test_folder / "test_lmdb", 8, test_shape)
    test_source = f"{test_folder}/test_lmdb" if test_folder else "test_lmdb"
    (folder / "two.prototxt").write_text(two_phase_net("train_lmdb", test_source))
    (folder / "solver.prototxt").write_text(SOLVER)
    return folder / "solver.prototxt"


@pytest.mark.real_dialogs
def test_all_zero_ip1_weights_ask_before_training_and_cancel_trains_nothing(qtbot, window, tmp_path):
    assert window.open_file(write_pair(tmp_path, (1, 6, 6), (1, 6, 6)))
    window.push(
        SetLayerField(window.doc.index_of("ip1"), "inner_product_param.weight_filler.type", "constant")
    )
    seen = {}

    def read_then_cancel() -> None:  # inside the real question's own event loop
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(10, read_then_cancel)
            return
        seen["text"] = box.informativeText()
        seen["buttons"] = [b.text() for b in box.buttons()]
        box.button(QMessageBox.StandardButton.Cancel).click()

    QTimer.singleShot(0, read_then_cancel)
    assert window.training.train() is None  # Cancel: no run
    assert window.training.controller.runs == []
    assert "ip1: All weights start at 0" in seen["text"] and "symmetry" in seen["text"]
    assert TRAIN_ANYWAY in seen["buttons"]

    asked = []
    window.ask_train_anyway = lambda traps: asked.append(traps) or True
    run = window.training.train()  # Train anyway
    assert run is not None and len(asked) == 1
    qtbot.waitUntil(lambda: not run.active, timeout=TIMEOUT_MS)


def test_train_and_test_data_of_different_shapes_are_named_and_the_error_says_why(qtbot, window, tmp_path):
    assert window.open_file(write_pair(tmp_path, (3, 8, 8), (1, 6, 6)))
    asked = []
    window.ask_train_anyway = lambda traps: asked.append(traps) or True
    run = window.training.train()
    (trap,) = asked[0]
    assert "TRAIN's data layer 'train_data' gives data 4×3×8×8" in trap
    assert "TEST's 'test_data' gives 4×1×6×6" in trap
    qtbot.waitUntil(lambda: run.status == "failed", timeout=TIMEOUT_MS)
    assert "Cannot share param weights from layer 'conv1'; shape mismatch" in run.error
    banner = html.unescape(window.training.error_text.text())
    assert "The cause is the TEST net's data layer 'test_data'" in banner and "4×1×6×6" in banner


def test_train_and_test_data_from_different_data_sets_are_named(qtbot, window, tmp_path):
    assert window.open_file(write_pair(tmp_path, (1, 6, 6), (1, 6, 6), test_folder="other"))
    asked = []
    window.ask_train_anyway = lambda traps: asked.append(traps) or False
    assert window.training.train() is None  # the answer was Cancel
    (trap,) = asked[0]
    assert "'train_data' reads train_lmdb" in trap and "'test_data' reads other/test_lmdb" in trap
    assert "chance" in trap


def test_a_net_without_traps_trains_without_a_question(qtbot, window, tmp_path):
    assert window.open_file(write_pair(tmp_path, (1, 6, 6), (1, 6, 6)))
    # All-zero weights in the last layer, straight into the loss: each unit gets its own gradient.
    window.push(
        SetLayerField(window.doc.index_of("ip2"), "inner_product_param.weight_filler.type", "constant")
    )
    window.ask_train_anyway = lambda traps: pytest.fail(f"asked: {traps}")
    run = window.training.train()
    assert run is not None
    qtbot.waitUntil(lambda: not run.active, timeout=TIMEOUT_MS)
    assert run.status == "finished", run.error


IMAGES = """name: "imgs"
layer { name: "images" type: "ImageData" top: "data" top: "label"
  image_data_param { source: "photos" batch_size: 2 new_height: 8 new_width: 8 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""


def test_an_image_data_source_that_is_a_folder_says_what_a_list_file_is(qtbot, window, tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "imgs.prototxt").write_text(IMAGES)
    assert window.open_file(tmp_path / "imgs.prototxt")
    window.graph.sync()
    problems = window.graph.problems
    texts = [problems.item(i).text() for i in range(problems.count())]
    said = next(t for t in texts if "photos" in t)
    assert "is a folder, not a list file" in said and "one image per line" in said
    assert "'cats/001.jpg 0'" in said


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            ("ip2", "inner_product_param.num_output", 1),
            "loss is a softmax over one class (ip2 has num_output: 1)",
        ),
        (None, "The solver's base_lr is 0"),
    ],
)
def test_a_loss_that_cannot_learn_asks_before_training(qtbot, window, tmp_path, edit, said):
    """#31 case 3, the last trap: a softmax over one class (probability 1, loss 0, no gradient); base_lr 0."""
    solver = write_pair(tmp_path, (1, 6, 6), (1, 6, 6))
    if edit is None:
        solver.write_text(SOLVER.replace("base_lr: 0.01", "base_lr: 0"))
    assert window.open_file(solver)
    if edit is not None:
        name, path, value = edit
        window.push(SetLayerField(window.doc.index_of(name), path, value))
    asked = []
    window.ask_train_anyway = lambda traps: asked.append(traps) or False
    assert window.training.train() is None  # Cancel: no run
    (traps,) = asked
    assert any(said in trap for trap in traps), traps


def test_frozen_weights_before_the_loss_are_a_trap_and_one_learning_layer_is_enough():
    from app.train_checks import loss_traps
    from proto.textio import parse_net

    net = parse_net(two_phase_net("a", "b"))
    assert loss_traps(net) == []
    for layer in net.layer:
        if layer.type in ("Convolution", "InnerProduct"):
            layer.param.add(lr_mult=0)
            layer.param.add(lr_mult=0)
    (trap,) = loss_traps(net)
    assert trap.startswith("No weight that learns reaches the loss (loss)")
    net.layer[2].param[0].lr_mult = 1  # conv1 learns again: its gradient passes the frozen layers
    assert loss_traps(net) == []
