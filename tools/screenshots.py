"""Make the README's and the guide's pictures from the real app, offscreen, at 1280x800.

    python tools/screenshots.py [OUT_DIR] [--only NAME ...]     (``make screenshots``: docs/images/)

Each picture is one function below that puts a fresh main window into a state a user reaches by
hand (open a net, pick a layer, switch a view, press Train), waits until the window shows what it
should, and saves ``OUT_DIR/NAME.png``. Nothing is written anywhere else: nets are opened from
copies in a temporary folder, and training runs there (its final snapshot, there too, is what
the Model pictures classify and evaluate with).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from PySide6.QtGui import QFontDatabase, QPainter  # noqa: E402
from PySide6.QtWidgets import QApplication, QPlainTextEdit  # noqa: E402

from app.files import EXAMPLES  # noqa: E402
from app.main_window import MainWindow  # noqa: E402
from engine.data import mnist, paths  # noqa: E402

SIZE = (1280, 800)
DEFAULT_OUT = ROOT / "docs" / "images"


def wait_until(condition: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
    """Run the event loop until ``condition()`` holds; an error naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"screenshots: gave up waiting for {what or 'the window'}")
        QApplication.processEvents()
        time.sleep(0.01)


def settle(seconds: float = 0.3) -> None:
    """Let queued paints, layouts and timers run."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QApplication.processEvents()
        time.sleep(0.01)


class Shots:
    """A temporary folder with copies of the examples, and a window per picture."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.lenet_model: str | None = None  # LeNet's weights once a picture trained it
        self.tmp = Path(tempfile.mkdtemp(prefix="barista-shots-"))
        shutil.copytree(EXAMPLES, self.tmp / "examples")
        # The bundled MNIST: the user's converted copy when there is one, else a copy made in the
        # temporary folder, so that making pictures writes nothing outside it.
        folder = mnist.default_folder()
        if not mnist.is_complete(folder):
            folder = mnist.ensure_mnist(self.tmp / "mnist")
        mnist.default_folder = lambda: folder  # type: ignore[assignment]
        os.environ[paths.ENV_VAR] = str(folder)  # LeNet's relative sources resolve there

    def window(self, relative: str) -> MainWindow:
        window = MainWindow()
        window.ask_unsaved_changes = lambda *args: "discard"  # type: ignore[method-assign]
        if not window.open_file(self.tmp / "examples" / relative):
            raise RuntimeError(f"screenshots: cannot open {relative}")
        window.resize(*SIZE)
        window.show()
        settle()
        return window

    def save(self, window: MainWindow, name: str) -> Path:
        """The window as the user sees it, with the dialog it has open (``window.shown_dialog``)
        painted where the window manager would centre it."""
        settle()
        path = self.out / f"{name}.png"
        picture = window.grab()
        dialog = getattr(window, "shown_dialog", None)
        if dialog is not None:
            top = dialog.grab()
            painter = QPainter(picture)
            x, y = (picture.width() - top.width()) // 2, (picture.height() - top.height()) // 3
            painter.drawPixmap(x, y, top)
            painter.end()
        if not picture.save(str(path)):
            raise OSError(f"screenshots: cannot write {path}")
        return path

    def select(self, window: MainWindow, layer: str) -> None:
        names = [layer.name for layer in window.doc.net.layer]
        window.selection.select(names.index(layer))
        settle()

    def close(self, window: MainWindow) -> None:
        if hasattr(window, "training"):
            window.training.shutdown()
        window.close()
        window.deleteLater()
        settle(0.1)


# ---- the pictures ----------------------------------------------------------------------------


def main_window(shots: Shots) -> MainWindow:
    """The window on a real net: GoogLeNet's inception module, its Layers, canvas and inspector."""
    window = shots.window("inception.prototxt")
    shots.select(window, window.doc.net.layer[1].name)
    return window


def canvas(shots: Shots) -> MainWindow:
    """LeNet on the canvas with a convolution picked: boxes, wires with shapes, the inspector."""
    window = shots.window("mnist/lenet_train_test.prototxt")
    shots.select(window, "conv2")
    return window


def splits(shots: Shots) -> MainWindow:
    """The Splits view: the net as Caffe runs it, with the Split layers InsertSplits adds."""
    window = shots.window("mnist/lenet_train_test.prototxt")
    bar = window.graph.toolbar
    bar.test.click()
    bar.splits.click()
    settle()
    return window


def initialisation(shots: Shots) -> MainWindow:
    """The Initialisation tab: conv1's weight filler, its histogram against the filler's density."""
    window = shots.window("mnist/lenet_train_test.prototxt")
    window.filler_dock.show()
    window.filler_dock.raise_()
    shots.select(window, "conv1")
    panel = window.filler_dock.widget()
    wait_until(lambda: "drawn" in panel.preview.stats.text(), 60, "the filler preview")
    return window


def net_start(shots: Shots) -> MainWindow:
    """How the net starts: what one batch does to each layer's activations at initialisation."""
    window = shots.window("mnist/lenet.prototxt")
    window.net_start_dock.show()
    window.net_start_dock.raise_()
    panel = window.net_start_dock.widget()
    settle(1.0)
    wait_until(lambda: not panel.jobs.busy, 120, "the net-start computation")
    return window


def training(shots: Shots) -> MainWindow:
    """Training LeNet on the bundled MNIST: the live loss and test-accuracy curves."""
    folder = shots.tmp / "examples" / "mnist"
    solver = folder / "lenet_solver.prototxt"
    text = solver.read_text()
    for field, value in {"max_iter": 300, "test_interval": 50, "test_iter": 10, "snapshot": 0}.items():
        text = re.sub(rf"(?m)^{field}: .*$", f"{field}: {value}", text)
    text = re.sub(r"(?m)^snapshot_prefix: .*$", f'snapshot_prefix: "{folder / "lenet"}"', text)
    solver.write_text(text)
    window = shots.window("mnist/lenet_solver.prototxt")
    dock = window.training
    dock.show()
    dock.buttons["train"].click()
    run = dock.controller.current
    assert run is not None
    wait_until(lambda: not run.active, 300, "the training run")
    settle(1.0)
    return window


def compare_init(shots: Shots) -> MainWindow:
    """Compare Initialisations on LeNet/MNIST: DIGITS's five fillers for 300 iterations, side by side."""
    window = shots.window("mnist/lenet_solver.prototxt")
    dialog = window.compare_init.open_dialog()
    dialog.setup.iterations.setValue(300)
    if not dialog.start():
        raise RuntimeError(f"screenshots: the experiment did not start: {dialog.status.text()}")
    experiment = dialog.runner.experiment
    assert experiment is not None
    wait_until(lambda: not experiment.status.active and len(dialog.verdict_lines) == 5, 600, "the experiment")
    dialog.resize(*SIZE)
    settle(1.0)
    return dialog  # type: ignore[return-value]


def export(shots: Shots) -> MainWindow:
    """File > Export > ONNX on LeNet: where to, the phase, the weights, and the command it runs."""
    window = shots.window("mnist/lenet.prototxt")
    dialog = window.export_actions.open_dialog("onnx")
    dialog.adjustSize()
    window.shown_dialog = dialog  # type: ignore[attr-defined]
    settle()
    return window


def command_line(shots: Shots) -> MainWindow:
    """The command line: ``main.py shapes`` and ``main.py export`` on LeNet, their real output in a
    terminal-like pane."""
    net = shots.tmp / "examples" / "mnist" / "lenet_train_test.prototxt"
    command = [sys.executable, "main.py", "shapes", str(net)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"screenshots: main.py shapes failed: {done.stderr.strip()}")
    shown = f"$ python main.py shapes examples/mnist/lenet_train_test.prototxt\n{done.stdout}"
    deploy = shots.tmp / "examples" / "mnist" / "lenet.prototxt"
    command = [sys.executable, "main.py", "export", str(deploy), str(shots.tmp / "lenet.onnx")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"screenshots: main.py export failed: {done.stderr.strip()}")
    said = (done.stdout + done.stderr).replace(str(shots.tmp) + os.sep, "").strip()
    shown += f"\n$ python main.py export examples/mnist/lenet.prototxt lenet.onnx\n{said}\n"
    window = QPlainTextEdit()
    window.setReadOnly(True)
    window.setWindowTitle("Terminal")
    window.setPlainText(shown)
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setPointSize(10)
    window.setFont(font)
    window.setStyleSheet(
        "QPlainTextEdit { background: #1e1e1e; color: #e6e6e6; border: none; padding: 8px; }"
    )
    window.resize(SIZE[0], 420)
    window.show()
    settle()
    return window  # type: ignore[return-value]


def _digit(shots: Shots) -> Path:
    """The first digit of the bundled MNIST's test set (a 7), as a PNG in the temporary folder."""
    from PIL import Image

    from engine.data.lmdb_source import LMDBSource
    from proto import caffe_pb2

    source = LMDBSource(mnist.default_folder() / "mnist_test_lmdb")
    datum = caffe_pb2.Datum.FromString(source.read(0, 1)[0][1])
    source.close()
    path = shots.tmp / "digit.png"
    Image.frombytes("L", (datum.width, datum.height), datum.data).save(path)
    return path


def classify(shots: Shots) -> MainWindow:
    """Model > Classify Image… on an MNIST digit with the LeNet just trained in the app: the top 5,
    conv1's activations and weights with their statistics."""
    window = training(shots)
    run = window.training.controller.current
    assert run is not None
    shots.lenet_model = next(p for p in reversed(run.snapshots) if p.endswith(".caffemodel"))
    dialog = window.model_menu.open_classify()
    dialog.resize(1180, 720)
    dialog.classify(str(_digit(shots)))
    wait_until(lambda: dialog.inspection is not None, 60, "the classification")
    dialog.show_layer("conv1")
    window.shown_dialog = dialog  # type: ignore[attr-defined]
    return window


def evaluate(shots: Shots) -> MainWindow:
    """Model > Evaluate on Data Set… on MNIST's 10,000 test digits: accuracy, the confusion matrix."""
    if shots.lenet_model is None:
        shots.close(classify(shots))
    model = shots.lenet_model
    assert model is not None
    window = MainWindow()
    window.ask_unsaved_changes = lambda *args: "discard"  # type: ignore[method-assign]
    window.open_file(shots.tmp / "examples" / "mnist" / "lenet_train_test.prototxt", model)
    window.resize(*SIZE)
    window.show()
    dialog = window.model_menu.open_evaluate()
    dialog.resize(1180, 720)
    dialog.run()
    wait_until(lambda: dialog.evaluation is not None, 300, "the evaluation")
    dialog.show_cell(9, 4)
    window.shown_dialog = dialog  # type: ignore[attr-defined]
    return window


def new_dataset(shots: Shots) -> MainWindow:
    """File > New Dataset from Images… on a folder of three classes of generated 32x32 pictures, written:
    the class counts per split, the progress bar at its end, Use with This Net offered."""
    import numpy as np
    from PIL import Image

    pictures = shots.tmp / "my_pictures"
    draw = np.random.default_rng(0)
    for c, name in enumerate(("circles", "squares", "stripes")):
        (pictures / name).mkdir(parents=True, exist_ok=True)
        for i in range(120):
            tint = np.zeros((32, 32, 3), np.uint8) + np.uint8(60 + 70 * c)
            noise = draw.integers(0, 60, (32, 32, 3), dtype=np.uint8)
            Image.fromarray(tint + noise).save(pictures / name / f"{name}_{i:03}.png")
    window = shots.window("mnist/lenet_train_test.prototxt")
    dialog = window.dataset_actions.open_dialog()
    dialog.folder.setText(str(pictures))
    dialog.output.setText(str(shots.tmp / "my_dataset"))
    dialog.create_button.click()
    wait_until(lambda: dialog.worker is None, 120, "the data set")
    window.shown_dialog = dialog  # type: ignore[attr-defined]
    settle()
    return window


PICTURES: dict[str, Callable[[Shots], MainWindow]] = {
    "main_window": main_window,
    "canvas": canvas,
    "splits": splits,
    "initialisation": initialisation,
    "net_start": net_start,
    "training": training,
    "compare_init": compare_init,
    "export": export,
    "new_dataset": new_dataset,
    "command_line": command_line,
    "classify": classify,
    "evaluate": evaluate,
}


def make(out: Path, only: list[str] | None = None) -> list[Path]:
    """Write the pictures named in ``only`` (all by default) into ``out``; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Barista")
    shots = Shots(out)
    written = []
    try:
        for name, picture in PICTURES.items():
            if only and name not in only:
                continue
            window = picture(shots)
            written.append(shots.save(window, name))
            shots.close(window)
            print(f"wrote {written[-1]}")
    finally:
        shutil.rmtree(shots.tmp, ignore_errors=True)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default=str(DEFAULT_OUT))
    parser.add_argument("--only", nargs="+", choices=sorted(PICTURES), help="make only these pictures")
    args = parser.parse_args(argv)
    make(Path(args.out), args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
