"""File > Export's dialog: the document's net as ONNX or as a PyTorch module, or its solver as a
training package for torchrun (Train > Train on a Cluster… is the same dialog, command first).

The export runs on a copy of the document (relative data paths made absolute, as training's copy);
the engine's exporters do the work and their one-line refusal is shown as it is. ``ask_path`` is a
method so tests can answer the file dialog.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import re
import shlex
import threading
from collections.abc import Callable, Iterator

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.export_work import NetExport, attempt, write_net, write_package
from app.training.job import absolutize_data_paths, document_folder, make_job
from engine.data.paths import beside_document
from engine.export.torch_files import PACKAGE_MARKER as MARKER
from engine.export.torch_files import shadowing
from engine.model_use.deploy import is_deploy
from proto import caffe_pb2
from proto.atomic_folder import OURS, folder_state

KINDS = {
    "onnx": ("Export as ONNX", ".onnx", "ONNX model (*.onnx)"),
    "torch": ("Export as PyTorch Module", ".py", "Python module (*.py)"),
    "package": ("Export Training Package", "", ""),
}
DEPLOY, AS_WRITTEN = 0, 1  # the Net choice of an ONNX or PyTorch export


class _Bridge(QObject):
    """Lives in the GUI thread: the worker's result arrives through a queued signal."""

    done = Signal(str, bool)


def default_output(doc, kind: str) -> str:
    """Beside the net, named after it, and holding nothing yet: ``train.prototxt``'s module is not the
    user's own ``train.py`` (nor a name that shadows a library, ``test.py``); a package folder may be
    an earlier package of ours (the export then asks before replacing it)."""
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(doc.net_path or doc.net.name or "net"))[0])
    stem = stem if stem and not stem[0].isdigit() else f"net_{stem}"
    if kind == "torch" and shadowing(stem):
        stem += "_net"
    folder = document_folder(doc)
    base = f"{stem}_torchrun" if kind == "package" else stem
    suffixes = {"torch": (".py", ".pt"), "onnx": (".onnx",), "package": ("",)}[kind]
    for name in _candidates(base, kind):
        paths = [os.path.join(folder, name + suffix) for suffix in suffixes]
        if not any(os.path.lexists(path) for path in paths) or (kind == "package" and _ours(paths[0])):
            return paths[0]
    raise AssertionError("unreachable")


def _candidates(base: str, kind: str) -> Iterator[str]:
    """train, train_net, train_net2, ... (train.py is the user's); train_torchrun, train_torchrun2, ..."""
    yield base
    more = "" if kind == "package" else "_net"
    if more:
        yield base + more
    for n in itertools.count(2):
        yield f"{base}{more}{n}"


def _ours(folder: str) -> bool:
    try:
        return folder_state(folder, MARKER, force=True) == OURS
    except OSError:
        return False


class ExportDialog(QDialog):
    exported = Signal(bool)  # an export finished: written or not

    def __init__(self, doc, kind: str, parent: QWidget | None = None, cluster: bool = False) -> None:
        super().__init__(parent)
        self.doc, self.kind = doc, kind
        self._thread: threading.Thread | None = None
        self._bridge = _Bridge(self)
        self._bridge.done.connect(self._finished)
        self.setWindowTitle("Train on a Cluster" if cluster else KINDS[kind][0])
        self.setMinimumWidth(720)
        layout = QVBoxLayout(self)
        intro = QLabel(self._intro(cluster))
        intro.setWordWrap(True)
        layout.addWidget(intro)
        form = QFormLayout()
        self.output = QLineEdit(default_output(doc, kind))
        form.addRow(
            "Folder" if kind == "package" else "File", self._with_browse(self.output, self._browse_output)
        )
        self.weights = QLineEdit()
        self.weights.setPlaceholderText("none: the fillers' initial values")
        form.addRow("Weights", self._with_browse(self.weights, self._browse_weights))
        self.phase = QComboBox()
        self.phase.addItems(["TEST", "TRAIN"])
        self.dynamic_batch = QCheckBox("Leave the batch axis free")
        self.processes = QSpinBox(minimum=1, maximum=1024, value=2)
        self.nodes = QSpinBox(minimum=1, maximum=4096, value=1)
        self.command = QLabel()  # the whole command, wrapped, selectable
        self.command.setWordWrap(True)
        self.command.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.command.setStyleSheet("font-family: monospace;")
        self.command.setMinimumHeight(3 * self.command.fontMetrics().lineSpacing())
        self.copy_button = QPushButton("Copy")
        self.copy_button.clicked.connect(self.copy_command)
        if kind == "package":
            form.addRow("Processes per node", self.processes)
            form.addRow("Nodes", self.nodes)
            row = QHBoxLayout()
            row.addWidget(self.command, 1)
            row.addWidget(self.copy_button)
            form.addRow("Command", row)
            for widget in (self.processes, self.nodes):
                widget.valueChanged.connect(self.update_command)
            self.output.textChanged.connect(self.update_command)
            self.weights.textChanged.connect(self.update_command)
        else:
            self.net_choice = QComboBox()
            self.net_choice.addItems(
                ["Deploy net (one input, the class probabilities out)", "The net as written"]
            )
            train_val = not is_deploy(doc.net)
            self.net_choice.setCurrentIndex(DEPLOY if train_val else AS_WRITTEN)
            self.net_choice.setEnabled(train_val)  # a deploy net already is exported as it is
            self.net_choice.setToolTip(
                "A train/val net's deploy net: its data layers become one Input (batch 1), the label, "
                "loss and accuracy layers go and the loss becomes a Softmax 'prob' (as Model Use derives it)"
            )
            self.net_choice.currentIndexChanged.connect(self._net_chosen)
            form.addRow("Net", self.net_choice)
            form.addRow("Phase", self.phase)
            self._net_chosen()
            if kind == "onnx":
                form.addRow("Batch", self.dynamic_batch)
        layout.addLayout(form)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)  # busy: how long an export takes is not known beforehand
        self.busy.setTextVisible(False)
        self.busy.hide()
        layout.addWidget(self.busy)
        buttons = QDialogButtonBox()
        self.export_button = buttons.addButton(
            "Write Package" if kind == "package" else "Export", QDialogButtonBox.ButtonRole.AcceptRole
        )
        buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.export_button.clicked.connect(self.start_export)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.update_command()

    def _net_chosen(self) -> None:
        self.phase.setEnabled(not self.uses_deploy())  # a deploy net is the TEST phase's layers

    def _intro(self, cluster: bool) -> str:
        if self.kind == "package":
            lead = "Train this net on more machines than one: " if cluster else ""
            return (
                lead + "writes a folder of plain PyTorch files (train.py, model.py, Caffe's solver and data "
                "layers) that trains the net as Caffe would, on one process or many under torchrun "
                "(gloo on CPUs, NCCL on GPUs). Each process reads its own batch_size per iteration."
            )
        if self.kind == "onnx":
            return "The net as an ONNX model whose inputs and outputs carry the blob names, weights inside."
        return (
            "The net as a readable PyTorch module, one attribute per layer, with its weights beside it (.pt)."
        )

    def _with_browse(self, edit: QLineEdit, slot) -> QWidget:
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(edit, 1)
        button = QPushButton("Browse…")
        button.clicked.connect(slot)
        row.addWidget(button)
        return box

    def ask_path(self, title: str, start: str, file_filter: str, folder: bool = False) -> str:
        if folder:
            return QFileDialog.getExistingDirectory(self, title, start)
        return QFileDialog.getSaveFileName(self, title, start, file_filter)[0]

    def _browse_output(self) -> None:
        path = self.ask_path(
            self.windowTitle(), self.output.text(), KINDS[self.kind][2], self.kind == "package"
        )
        if path:
            self.output.setText(path)

    def _browse_weights(self) -> None:
        path = QFileDialog.getOpenFileName(
            self,
            "Weights",
            document_folder(self.doc),
            "Caffe weights (*.caffemodel *.caffemodel.h5);;All files (*)",
        )[0]
        if path:
            self.weights.setText(path)

    def update_command(self) -> None:
        train = os.path.join(self.output.text().strip(), "train.py")
        if self.nodes.value() == 1:
            parts = ["torchrun", "--standalone", f"--nproc_per_node={self.processes.value()}", train]
        else:
            parts = [
                "torchrun",
                f"--nnodes={self.nodes.value()}",
                f"--nproc_per_node={self.processes.value()}",
                "--rdzv_backend=c10d",
                "--rdzv_endpoint=HEAD_NODE:29500",
                train,
            ]
        if self.weights.text().strip():
            parts += ["--weights", self.weights.text().strip()]
        self.command.setText(" ".join(shlex.quote(p) for p in parts))

    def copy_command(self) -> None:
        QGuiApplication.clipboard().setText(self.command.text())
        self.status.setText("The command is on the clipboard.")

    def export(self) -> bool:
        """Write the export now (scripts and tests); the status line says what was written or why not."""
        work = self._prepare()
        if work is None:
            return False
        message, ok = attempt(work)
        self._finished(message, ok)
        return ok

    def start_export(self) -> bool:
        """The Export button: write it in a worker thread while the dialog shows that it is busy;
        the status line (and the window's status bar) says what was written once it is done."""
        work = self._prepare()
        if work is None:
            return False
        self._set_busy(True)
        thread = threading.Thread(target=self._work, args=(work,), name="barista-export", daemon=True)
        self._thread = thread
        thread.start()
        return True

    def is_busy(self) -> bool:
        return self._thread is not None

    def _work(self, work: Callable[[], str]) -> None:
        result = attempt(work)
        with contextlib.suppress(RuntimeError):  # the window was closed meanwhile: no one to tell
            self._bridge.done.emit(*result)  # only the signal crosses back to the GUI thread

    def _set_busy(self, busy: bool) -> None:
        self.busy.setVisible(busy)
        self.export_button.setEnabled(not busy)
        if busy:
            self.status.setText(f"Exporting to {os.path.basename(self.output.text().strip())}…")

    def _finished(self, message: str, ok: bool) -> None:
        self._thread = None
        self._set_busy(False)
        self.status.setText(message)
        if self.kind == "package" and ok:
            self.update_command()
        bar = getattr(self.parent(), "statusBar", None)
        if callable(bar):  # seen even when the dialog was closed meanwhile
            bar().showMessage(message if ok else f"{self.windowTitle()}: {message}", 10000)
        self.exported.emit(ok)

    def _prepare(self) -> Callable[[], str] | None:
        """What the export will do, read from the document and the form now (the worker never reads
        them); None when there is nothing to do (no name, or the user would not replace a file)."""
        out = self.output.text().strip()
        if not out:
            self.status.setText("Choose where to write it.")
            return None
        force = self._replace_asked(out)
        if force is None:
            self.status.setText("Not exported: choose another name, or let it replace the one there.")
            return None
        weights = self.weights.text().strip() or None
        if self.kind == "package":
            return functools.partial(
                write_package, make_job(self.doc).solver, out, weights, force, self._source()
            )
        net = caffe_pb2.NetParameter()
        net.CopyFrom(self.doc.net)
        absolutize_data_paths(net, document_folder(self.doc), data_paths=beside_document(self.doc))
        options = NetExport(
            kind=self.kind,
            net=net,
            net_path=self.doc.net_path or getattr(self.doc, "origin", None),
            out=out,
            weights=weights,
            phase=caffe_pb2.Phase.Value(self.phase.currentText()),
            deploy=self.uses_deploy(),
            dynamic_batch=self.dynamic_batch.isChecked(),
        )
        return functools.partial(write_net, options)

    def _source(self) -> str:
        path = self.doc.solver_path or self.doc.net_path or getattr(self.doc, "origin", None)
        return os.path.basename(path) if path else f"the unsaved net {self.doc.net.name or ''}".rstrip()

    def ask_replace(self, question: str) -> bool:
        answer = QMessageBox.question(self, self.windowTitle(), question)
        return answer == QMessageBox.StandardButton.Yes

    def _replace_asked(self, out: str) -> bool | None:
        """False: nothing there to replace; True: the user agreed to replace it; None: they did not.
        A folder of the user's own is not asked about: the exporter refuses it, in words."""
        if self.kind == "package":
            try:
                folder_state(out, MARKER)
            except OSError as exc:
                if exc.errno != errno.EEXIST:
                    return False
                question = f"{out} holds a training package written earlier. Replace it?"
                return True if self.ask_replace(question) else None
            return False
        stem = os.path.splitext(out)[0]
        there = [p for p in (out, stem + ".pt" if self.kind == "torch" else "") if p and os.path.lexists(p)]
        if not there:
            return False
        names = " and ".join(os.path.basename(p) for p in there)
        verb = "exists" if len(there) == 1 else "exist"
        question = f"{names} already {verb} in {os.path.dirname(out) or '.'}. Replace?"
        return True if self.ask_replace(question) else None

    def uses_deploy(self) -> bool:
        return self.kind in ("onnx", "torch") and self.net_choice.currentIndex() == DEPLOY
