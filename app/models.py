"""Opening a trained model (``.caffemodel``, binary or HDF5): its net, and its weights to look at.

The net is the prototxt found beside the model (same stem, or the stem without Caffe's
``_iter_N``; a run's snapshots get theirs, ``app.training.run_files``), else the net named by the
solver whose ``snapshot_prefix`` names the model, else the one the user picks, else the net
rebuilt from the model's own layer list (a binary caffemodel carries every layer's definition;
an HDF5 one carries only the blobs).
The weights become the document's (``Document.weights``): the Weights view draws them and Train
starts from them. Qt-free.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from app import files
from app.document import Document
from engine import relative_paths
from proto import caffe_pb2, hdf5io
from proto.binaryio import read_caffemodel
from proto.errors import FormatError

_ITER = re.compile(r"_iter_\d+$")


class Cancelled(Exception):
    """The user was asked for a model's net and cancelled: nothing opens."""


def _stem(path: str) -> str:
    name = os.path.basename(path)
    for suffix in (".caffemodel.h5", ".caffemodel", ".h5"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return Path(name).stem


def snapshot_prefix(model_path: str) -> str:
    """``lenet`` for ``lenet_iter_650.caffemodel``: the name its net would have beside it."""
    return _ITER.sub("", _stem(model_path))


def net_beside(model_path: str) -> Path | None:
    """The net prototxt beside a model: ``STEM.prototxt``, or ``PREFIX.prototxt`` for ``PREFIX_iter_N``."""
    folder, stem = Path(model_path).parent, _stem(model_path)
    for name in dict.fromkeys((stem, _ITER.sub("", stem))):
        for ext in (".prototxt", ".pt"):
            candidate = folder / f"{name}{ext}"
            if candidate.is_file():
                return candidate
    return None


def solver_for_snapshot(model_path: str) -> Path | None:
    """The solver whose ``snapshot_prefix`` names this snapshot (``PREFIX_iter_N``) and whose net is
    there: looked for beside the model and one folder up (snapshots in a subfolder of the solver's).

    The prefix resolves as the solver's other paths do: beside it, else from a folder above it
    (BVLC's ``snapshot_prefix: "examples/mnist/lenet"`` from the Caffe root).
    """
    model = Path(os.path.abspath(model_path))
    prefix = snapshot_prefix(model_path)
    if not prefix:
        return None
    target = os.path.normpath(model.parent / prefix)
    for folder in dict.fromkeys((model.parent, model.parent.parent)):
        for path, solver in files.solvers_in(folder):
            given = solver.snapshot_prefix or path.stem  # Caffe master: the solver file's stem
            bases = [Path()] if os.path.isabs(given) else relative_paths.folders_from(path)
            places = [base / given for base in bases]
            if target not in (os.path.normpath(p) for p in places):
                continue
            net = files.solver_net_path(solver, path)
            if net is not None and net.is_file():
                return path
    return None


def read_weights(path: str) -> tuple[dict[str, list[np.ndarray]], caffe_pb2.NetParameter | None]:
    """Every layer's blobs (layer name -> arrays, in order) and, for a binary model, its layer list."""
    if hdf5io.is_hdf5(path):
        groups = hdf5io.read_weights(path)
        weights = {
            name: [blobs[k] for k in sorted(blobs, key=int)] for name, blobs in groups.items() if blobs
        }
        return weights, None
    from engine.pycaffe.io import blobproto_to_array

    model = read_caffemodel(path)
    weights = {
        layer.name: [blobproto_to_array(b) for b in layer.blobs] for layer in model.layer if layer.blobs
    }
    return weights, model


def rebuilt_net(model: caffe_pb2.NetParameter) -> caffe_pb2.NetParameter:
    """The net a binary caffemodel describes, without its blobs."""
    net = caffe_pb2.NetParameter()
    net.CopyFrom(model)
    for layer in net.layer:
        layer.ClearField("blobs")
    return net


def open_any(
    doc: Document,
    path: str | os.PathLike[str],
    *,
    drop_unknown: bool = False,
    pick_net: Callable[[str], str | None] | None = None,
) -> files.Opened:
    """Open a net or solver prototxt (``files.open_path``), or a trained model (``open_model``);
    ``pick_net(model_path)`` asks for a model's net file when none is beside it: a path, '' to rebuild
    the net from the model, or None to open nothing (``Cancelled``)."""
    if files.is_model(path):
        return open_model(doc, os.path.abspath(path), pick_net)
    return files.open_path(doc, path, drop_unknown=drop_unknown)


def open_model(doc: Document, path: str, pick_net: Callable[[str], str | None] | None = None) -> files.Opened:
    """Open the model at ``path``: its net (beside it, picked, or rebuilt) and its weights.

    Raises OSError or FormatError, leaving the document as it was.
    """
    weights, model = read_weights(path)
    net_path = net_beside(path)
    solver_path = solver_for_snapshot(path) if net_path is None else None
    if net_path is None and solver_path is None and pick_net is not None:
        picked = pick_net(path)
        if picked is None:
            raise Cancelled(path)
        net_path = Path(picked) if picked else None
    notices: list[str] = []
    if solver_path is not None:
        opened = files.open_path(doc, solver_path)
        notices += opened.notices
        net_name = os.path.basename(doc.net_path or doc.origin or "") or "the net inside it"
        notices.append(
            f"Net: {net_name}, named by {solver_path.name} (its snapshot_prefix names this snapshot); "
            f"weights: {os.path.basename(path)}"
        )
    elif net_path is not None:
        opened = files.open_path(doc, net_path)
        notices += opened.notices
        notices.append(f"Net: {net_path.name}; weights: {os.path.basename(path)}")
    elif model is not None:
        net = rebuilt_net(model)
        doc.load_net(
            net, None, title=f"{net.name or _stem(path)} (from {os.path.basename(path)})", origin=path
        )
        doc.load_solver(caffe_pb2.SolverParameter(), None)
        notices.append(
            f"No net prototxt beside {os.path.basename(path)}: the net is rebuilt from the model's own "
            "layer list (Save As writes it as a prototxt)"
        )
    else:
        raise FormatError(
            path,
            "an HDF5 model holds only weights, not the net: "
            "open its net prototxt (or put it beside the model)",
        )
    doc.set_weights(path, weights)
    return files.Opened("model", notices, weights=path)


def load_weights_into(doc: Document, path: str) -> None:
    """Weights for the net already open (``main.py NET --weights W``); OSError / FormatError."""
    weights, _ = read_weights(path)
    doc.set_weights(path, weights)
