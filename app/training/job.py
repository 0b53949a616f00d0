"""What one run trains: a frozen copy of the document's net and solver, ready for the engine.

The solver's net (``net`` or ``train_net``) is replaced by the document's net itself, so edits
that are not saved train too and later edits never reach the run. Relative test nets and
snapshots resolve against the document's folder, as they would beside the file; data files by the
rule the canvas and View Data follow too (engine.data.paths.beside_document).
A Data layer naming one of the bundled MNIST databases that exists nowhere gets the bundled copy.
A net with no folder of its own to write to (untitled, an example, read-only) snapshots into a
fresh folder under the per-user runs folder, never beside the file it came from. Trained weights
opened with the net are where the run starts (the solver's ``weights``). Qt-free.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app import files, netio
from app.fields import copy_message
from engine import pymodules
from engine.data.paths import DEFAULT, DataPaths, beside_document
from proto import caffe_pb2

# When the document has no solver: Caffe's LeNet schedule, short.
DEFAULT_SOLVER = """\
type: "SGD"
base_lr: 0.01
momentum: 0.9
weight_decay: 0.0005
lr_policy: "fixed"
max_iter: 1000
display: 100
"""

# (layer parameter, field) pairs that name a file read relative to the working directory.
_DATA_PATHS = (
    ("data_param", "source"),
    ("data_param", "mean_file"),
    ("image_data_param", "source"),
    ("image_data_param", "mean_file"),
    ("hdf5_data_param", "source"),
    ("window_data_param", "source"),
    ("window_data_param", "mean_file"),
    ("transform_param", "mean_file"),
)


@dataclass(frozen=True)
class TrainingJob:
    solver: caffe_pb2.SolverParameter  # with the net inlined; never shared with the document
    base_dir: str
    device: str  # "cpu" | "gpu"
    net_text: str  # the settings as the user wrote them, kept with the run
    solver_text: str
    notes: tuple[str, ...] = field(default=())  # what the console should say before the engine does
    canonical: str = ""  # solver and net rendered the same way every time, for diffs between runs
    module_dirs: tuple[str, ...] = ()  # Python layers' modules are imported from here first
    output_dir: str = ""  # where snapshots go when not beside the net (a runs folder); "" beside it
    data_paths: DataPaths = DEFAULT  # where its data files are looked for (engine.data.paths.beside_document)

    @property
    def summary(self) -> str:
        s = self.solver
        return (
            f"{s.type or 'SGD'} · lr {s.base_lr:g} {s.lr_policy} · {s.max_iter} iter · {self.device.upper()}"
        )

    def nets(self) -> list[caffe_pb2.NetParameter]:
        return [n for n in (self.solver.net_param, self.solver.train_net_param) if n.ByteSize()]

    def python_modules(self) -> list[str]:
        return [name for net in self.nets() for name in pymodules.module_names(net)]


def document_folder(doc) -> str:
    """The folder relative paths mean: the solver's file, else the net's, else the file an untitled
    copy came from, else the working directory."""
    path = doc.solver_path or doc.net_path or getattr(doc, "origin", None)
    return os.path.dirname(os.path.abspath(path)) if path else os.getcwd()


def writes_beside(doc) -> bool:
    """True when snapshots may go beside the document's files, as ``caffe train`` writes them: the
    files exist, are not installed examples, and their folder is writable."""
    paths = [p for p in (doc.solver_path, doc.net_path) if p]
    if not paths:
        return False
    folder = os.path.dirname(os.path.abspath(paths[0]))
    return not any(files.is_installed(p) for p in paths) and os.access(folder, os.W_OK)


def run_folder(name: str) -> Path:
    """A fresh folder under the runs folder for one run of ``name``."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = files.runs_folder() / f"{name or 'net'}-{stamp}"
    folder, n = base, 1
    while folder.exists():
        n += 1
        folder = base.with_name(f"{base.name}-{n}")
    return folder


def make_job(doc, device: str = "cpu") -> TrainingJob:
    """A training copy of ``doc`` (an ``app.document.Document``); reading it changes nothing."""
    notes: list[str] = []
    defaulted = doc.solver_path is None and doc.solver.ByteSize() == 0
    if defaulted:
        solver, _ = netio.load_solver_text(DEFAULT_SOLVER)
        notes.append("No solver is open: training with " + DEFAULT_SOLVER.replace("\n", " ").strip())
    else:
        solver = copy_message(doc.solver)
    net = copy_message(doc.net)
    canonical = f"{netio.solver_to_text(solver).rstrip()}\n\n{netio.net_to_text(net).rstrip()}\n"
    base_dir = document_folder(doc)
    output = None if writes_beside(doc) else run_folder(Path(solver.snapshot_prefix).name or net.name)
    data_paths = beside_document(doc)  # as the canvas and View Data look
    absolutize_data_paths(net, base_dir, str(output) if output else None, data_paths)
    if solver.HasField("train_net") or solver.HasField("train_net_param"):
        solver.ClearField("train_net")
        solver.train_net_param.CopyFrom(net)
    else:
        solver.ClearField("net")
        solver.net_param.CopyFrom(net)
    if not solver.snapshot_prefix:  # Caffe master: the solver file's name without its extension
        stem = Path(doc.solver_path).stem if doc.solver_path else (net.name or "net")
        solver.snapshot_prefix = stem
    output_dir = str(output) if output else ""
    if output is not None:
        solver.snapshot_prefix = str(output / (Path(solver.snapshot_prefix).name or "net"))
        why = "untitled" if not (doc.net_path or doc.solver_path) else "read-only or an installed example"
        notes.append(f"Snapshots go to {output_dir} (the net is {why}; Save it to train beside it)")
    weights = getattr(doc, "weights_path", None)
    if weights and not solver.weights:
        solver.weights.append(os.path.abspath(weights))
        notes.append(f"Starting from the weights in {weights}")
    solver.solver_mode = caffe_pb2.SolverParameter.GPU if device == "gpu" else caffe_pb2.SolverParameter.CPU
    # The run keeps the solver as the user wrote it (where the snapshots went, and the weights it
    # started from, are in its notes): the document's, or the default it trained with.
    solver_text = DEFAULT_SOLVER if defaulted else doc.solver_text()
    module_dirs = tuple(pymodules.folders(doc.net_path, doc.solver_path))
    modules = pymodules.module_names(net)
    if modules:
        where = " and ".join(module_dirs) or "nowhere yet (the net is not saved)"
        notes.append(
            f"Python layers ({', '.join(modules)}): modules are imported from {where} first, "
            "as if the net's folder were on PYTHONPATH"
        )
    return TrainingJob(
        solver,
        base_dir,
        device,
        doc.net_text(),
        solver_text,
        tuple(notes),
        canonical,
        module_dirs,
        output_dir,
        data_paths,
    )


def absolutize_data_paths(
    net: caffe_pb2.NetParameter,
    base_dir: str,
    output_dir: str | None = None,
    data_paths: DataPaths | None = None,
) -> None:
    """Make relative data files that ``data_paths`` finds (by default: beside ``base_dir``)
    absolute; the rest stay for the data root.

    An HDF5Output's file is written beside the net, as ``caffe train`` run from there writes it, or
    into ``output_dir`` when the run may not write there.
    """
    where = data_paths if data_paths is not None else DataPaths(search_from=(Path(base_dir),))
    for layer in net.layer:
        output = layer.hdf5_output_param
        if layer.type == "HDF5Output" and output.file_name and not os.path.isabs(output.file_name):
            output.file_name = os.path.join(output_dir or base_dir, output.file_name)
        for param_name, field_name in _DATA_PATHS:
            if not layer.HasField(param_name):
                continue
            param = getattr(layer, param_name)
            value = getattr(param, field_name)
            found = where.resolve(value) if value and not os.path.isabs(value) else None
            if found is not None and found.exists() and where.data_root() not in found.parents:
                setattr(param, field_name, os.path.abspath(found))


def provide_bundled_data(
    nets: list[caffe_pb2.NetParameter], say: Callable[[str], None], data_paths: DataPaths = DEFAULT
) -> DataPaths:
    """Where the run's nets look for their data: the bundled MNIST as the data root when a Data
    layer needs it (the run builds its solver with these; nothing global is set).

    Runs in the worker: the first conversion takes seconds. Nothing is prepared when every source
    resolves already (a real path, or a data root the user set).
    """
    from engine.data.bundled import bundled_mnist_for

    shown = [-1]

    def progress(done: int, total: int, what: str) -> None:
        step = 10 * done // max(total, 1)
        if step != shown[0]:
            shown[0] = step
            say(f"Preparing the bundled MNIST ({what}): {done}/{total}")

    folder = bundled_mnist_for(nets, data_paths, progress)
    if folder is None:
        return data_paths
    say(f"Data root: {folder}")
    return data_paths.with_root(folder)
