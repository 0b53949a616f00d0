"""Compare Initialisations in the window: opened from the Train menu and the Initialisation tab, it
trains LeNet under the picked fillers in the background, overlays their curves (one per variant,
the legend naming the filler), draws the chosen layer's statistics, says a verdict per variant, and
Pause/Stop hold and end every variant at once."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import Qt
from windows import open_window

from app.files import EXAMPLES
from engine.data import mnist, paths
from engine.events import RunStatus
from tests.engine.compare_init_support import mnist_root  # noqa: F401  (a fixture)

TIMEOUT_MS = 120000  # real training on a shared 2-core machine: generous, the conditions are real


@pytest.fixture
def window(qtbot, monkeypatch, mnist_root):  # noqa: F811
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.setattr(mnist, "default_folder", lambda: mnist_root)
    w = open_window(qtbot, EXAMPLES / "mnist" / "lenet_solver.prototxt")
    yield w
    dialog = w.compare_init.dialog
    if dialog is not None:
        dialog.stop()
        dialog.runner.join(30)
    w.training.shutdown()


def train_menu(window):
    return next(a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == "Train")


def pick(dialog, *labels: str) -> None:
    for label, check in dialog.setup.presets.items():
        check.setChecked(label in labels)


def test_the_dialog_trains_every_variant_and_overlays_their_curves(qtbot, window):
    action = next(a for a in train_menu(window).actions() if a.text() == "Compare &Initialisations…")
    action.trigger()
    dialog = window.compare_init.dialog
    assert dialog is not None and dialog.isVisible()
    window.compare_init.button.click()  # the Initialisation tab's button shows the same dialog
    assert window.compare_init.dialog is dialog
    assert window.compare_init.button.parent() is window.filler_dock.widget()

    pick(dialog, "constant 0 (Caffe's default)", "xavier")
    dialog.setup.iterations.setValue(20)
    dialog.setup.test_iter.setValue(1)
    qtbot.mouseClick(dialog.buttons["start"], Qt.MouseButton.LeftButton)
    experiment = dialog.runner.experiment
    assert experiment is not None and not dialog.buttons["start"].isEnabled()
    qtbot.waitUntil(lambda: experiment.status is RunStatus.FINISHED, timeout=TIMEOUT_MS)
    qtbot.waitUntil(
        lambda: len(dialog.verdict_lines) == 2 and "Finished" in dialog.status.text(), timeout=TIMEOUT_MS
    )

    view = dialog.curves
    assert [view.points(k) for k in range(2)] == [20, 20]  # one loss curve per variant, every iteration
    names = [label.text for _sample, label in view.legend.items]
    assert names == ["constant 0 (Caffe's default)", "xavier"]
    tested = view.accuracy_items[1].getData()[0]
    assert list(tested) == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20]  # a tenth of the run, and the end
    # The per-layer panel starts on ip1, the ReLU layer: the zero net's outputs are all dead there.
    assert view.layer_combo.currentText() == "ip1"
    dead_zero = view.stat_items["dead"][0].getData()[1]
    dead_xavier = view.stat_items["dead"][1].getData()[1]
    assert len(dead_zero) == 20 and set(dead_zero) == {1.0} and 0 < dead_xavier[-1] < 1
    view.layer_combo.setCurrentText("conv1")  # another layer: the curves follow
    zero_grads = view.stat_items["grad_norm"][0].getOriginalDataset()[1]  # as set, before the log axis
    assert all(math.isnan(g) for g in zero_grads)  # no gradient reaches conv1 through zeros: a gap
    assert all(g > 0 for g in view.stat_items["grad_norm"][1].getOriginalDataset()[1])
    assert "did not learn: loss flat at 2.30" in dialog.verdict_lines[0]
    assert dialog.buttons["start"].isEnabled() and not dialog.buttons["stop"].isEnabled()

    # Each variant is a run of the Runs tab, named by its variant, its curves and its filler with it.
    runs = window.training.controller.runs
    assert [r.name for r in runs] == ["Run 1 · constant 0 (Caffe's default)", "Run 2 · xavier"]
    assert [len(r.train) for r in runs] == [20, 20] and all(r.status is RunStatus.FINISHED for r in runs)
    assert runs[1].train.column("loss")[-1] == experiment.curves[1].loss[-1]
    assert runs[1].tests["accuracy"].column("value")[-1] == experiment.curves[1].tests[-1][1]["accuracy"]
    assert runs[0].fillers() == "constant ×4" and runs[1].fillers() == "xavier ×4"
    changed = [
        line[0] + line[1:].strip() for line in runs[1].diff_from(runs[0]).splitlines()[2:] if line[:1] in "+-"
    ]
    assert changed == ['-type: "constant"', "-value: 0.0", '+type: "xavier"'] * 4  # the fillers, nothing else
    assert window.training.runs.tree.topLevelItemCount() == 2


def test_pause_holds_and_stop_ends_every_variant(qtbot, window):
    dialog = window.compare_init.open_dialog()
    pick(dialog, "xavier", "msra", "gaussian std 0.01")
    dialog.setup.iterations.setValue(5000)
    dialog.setup.test_iter.setValue(1)
    assert dialog.start()
    experiment = dialog.runner.experiment
    qtbot.waitUntil(lambda: all(len(c.loss) >= 3 for c in experiment.curves), timeout=TIMEOUT_MS)
    dialog.buttons["pause"].click()
    qtbot.waitUntil(lambda: experiment.status is RunStatus.PAUSED, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: dialog.buttons["pause"].text() == "Resume" and "Paused" in dialog.status.text())
    held = [len(c.loss) for c in experiment.curves]
    assert len(set(held)) == 1  # paused between two rounds: every variant at the same iteration
    dialog.buttons["stop"].click()
    qtbot.waitUntil(lambda: experiment.status is RunStatus.STOPPED, timeout=TIMEOUT_MS)
    assert [len(c.loss) for c in experiment.curves] == held  # nothing ran after the pause
    qtbot.waitUntil(lambda: len(dialog.verdict_lines) == 3 and "Stopped" in dialog.status.text())


def test_bad_settings_say_why_and_start_nothing(qtbot, window):
    dialog = window.compare_init.open_dialog()
    pick(dialog, "xavier")
    assert "pick 2 to 6 variants (1 now)" in dialog.setup.problem.text()
    assert not dialog.buttons["start"].isEnabled()
    dialog.setup.custom[0].setText("gaussian sdt=1")
    assert "gaussian has no field 'sdt'" in dialog.setup.problem.text()
    dialog.setup.custom[0].setText("gaussian std=1")
    assert dialog.setup.problem.text() == "" and dialog.buttons["start"].isEnabled()
    dialog.setup.layers.setText("conv1, nope")
    assert not dialog.start()
    assert dialog.status.text() == "the net has no layer 'nope'" and dialog.runner.experiment is None


def test_the_command_line_draws_the_curves_as_the_window_does(monkeypatch, mnist_root, tmp_path, capsys):  # noqa: F811
    from PySide6.QtGui import QImage

    import main
    from tests.engine.compare_init_support import LENET_SOLVER

    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.setattr(mnist, "default_folder", lambda: mnist_root)
    out = tmp_path / "curves.png"
    args = ["--variant", "xavier", "--variant", "zero=constant 0", "--iterations", "3", "--test-iter", "1"]
    assert main.main(["compare-init", "--solver", str(LENET_SOLVER), *args, "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1280, 800)
    colours = {image.pixel(x, y) for x in range(0, 1280, 7) for y in range(0, 800, 7)}
    assert len(colours) > 50  # curves, axes, text: not a blank page
    assert [p.name for p in tmp_path.iterdir()] == ["curves.png"]  # written whole, no temporary left


def test_each_variant_is_a_run_from_its_start_and_a_stop_keeps_them(qtbot, window):
    dialog = window.compare_init.open_dialog()
    pick(dialog, "xavier", "msra")
    dialog.setup.iterations.setValue(5000)
    dialog.setup.test_iter.setValue(1)
    assert dialog.start()
    experiment = dialog.runner.experiment
    controller, view = window.training.controller, window.training.runs
    qtbot.waitUntil(lambda: len(controller.runs) == 2, timeout=TIMEOUT_MS)
    runs = controller.runs
    assert [r.name for r in runs] == ["Run 1 · xavier", "Run 2 · msra"]
    assert all(r.status is RunStatus.RUNNING and r.max_iter == 5000 for r in runs)
    rows = {view.tree.topLevelItem(i).text(0): view.tree.topLevelItem(i) for i in range(2)}
    assert [rows[r.name].text(1) for r in runs] == ["running", "running"]

    # Followed while the experiment goes on: the points grow, the row says how far, a click opens it.
    qtbot.waitUntil(lambda: all(len(r.train) >= 3 for r in runs), timeout=TIMEOUT_MS)
    assert experiment.status.active and not dialog.buttons["start"].isEnabled()
    qtbot.waitUntil(lambda: rows["Run 1 · xavier"].text(2).split("/")[0] not in ("", "0"), timeout=TIMEOUT_MS)
    view.tree.setCurrentItem(rows["Run 1 · xavier"])
    assert (
        view.details.toPlainText().startswith("Run 1 · xavier")
        and 'type: "xavier"' in view.details.toPlainText()
    )
    assert window.training.train_action.isEnabled()  # the dock's own Train is not held by the experiment

    dialog.buttons["stop"].click()
    qtbot.waitUntil(lambda: all(r.status is RunStatus.STOPPED for r in runs), timeout=TIMEOUT_MS)
    assert experiment.status is RunStatus.STOPPED and controller.runs == runs  # kept, none added
    for run, curves in zip(runs, experiment.curves):
        assert len(run.train) == len(curves.loss) < 5000  # complete: every iteration the variant ran
        assert run.train.column("loss")[-1] == curves.loss[-1] and run.iter == len(curves.loss)
        assert (
            run.log[-1][1] == f"Verdict: {curves.verdict.text}" and "stopped at iteration" in run.log[-1][1]
        )
    assert [rows[r.name].text(1) for r in runs] == ["stopped", "stopped"]
