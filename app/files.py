"""Opening whatever prototxt the user picks: a net, or a solver together with the net it names."""

from __future__ import annotations

import os
from pathlib import Path

from app import netio
from app.document import Document
from engine import relative_paths
from proto import caffe_pb2
from proto.errors import FormatError

EXAMPLES = Path(__file__).resolve().parent.parent / "resources" / "examples"
DEFAULT_SOLVER = EXAMPLES / "mnist" / "lenet_solver.prototxt"
DEFAULT_NET = EXAMPLES / "mnist" / "lenet_train_test.prototxt"


def solver_net_path(solver: caffe_pb2.SolverParameter, solver_path: str | os.PathLike[str]) -> Path | None:
    """The net file a solver names (``net`` or ``train_net``): beside the solver, else in a folder
    above it (BVLC's solvers name nets from the Caffe root), else as given; beside it when nowhere."""
    name = solver.net or solver.train_net
    if not name:
        return None
    found = relative_paths.find(name, solver_path)
    return found.path if found is not None else Path(solver_path).parent / name


def open_path(doc: Document, path: str | os.PathLike[str]) -> str:
    """Open ``path`` into ``doc`` as a net, or as a solver plus its net; returns "net" or "solver".

    Raises OSError or FormatError (the net's error, unless the file looks like a solver) and then
    leaves the document as it was.
    """
    path = os.path.abspath(path)
    text = netio.read_file(path)
    solver_first = "solver" in Path(path).name.lower()
    try:
        if solver_first:
            return _open_solver(doc, text, path)
        net, kept = netio.load_net_text(text, path)
    except FormatError as first:
        try:
            if solver_first:
                net, kept = netio.load_net_text(text, path)
            else:
                return _open_solver(doc, text, path)
        except FormatError:
            raise first from None
    doc.load_net(net, path, kept)
    return "net"


def _open_solver(doc: Document, text: str, path: str) -> str:
    solver, kept = netio.load_solver_text(text, path)
    net_path = solver_net_path(solver, path)
    if net_path is not None and not net_path.is_file():  # one line naming where it was looked for
        raise FormatError(path, relative_paths.not_found(solver.net or solver.train_net, path, "net"))
    if net_path is not None:
        net, net_text = netio.load_net_text(netio.read_file(net_path), net_path)  # may raise: nothing changed
        doc.load_net(net, os.fspath(net_path), net_text)
    doc.load_solver(solver, path, kept)
    return "solver"
