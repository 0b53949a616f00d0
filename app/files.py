"""Opening whatever file the user picks: a net, a solver together with the net it names, or a
trained model; and where files the user did not pick go (never into the installed resources/).

A net brings along the solver in its folder whose ``net:`` names it, else none: a solver never
stays behind from the previous net. A bundled example (anything under resources/) opens as an
untitled copy, so Save asks where and the installed file stays as it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from app import netio
from app.document import Document
from engine import relative_paths
from engine.data import paths as data_paths
from graph_view import sidecar
from proto import caffe_pb2
from proto.errors import FormatError

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
EXAMPLES = RESOURCES / "examples"
DEFAULT_SOLVER = EXAMPLES / "mnist" / "lenet_solver.prototxt"
DEFAULT_NET = EXAMPLES / "mnist" / "lenet_train_test.prototxt"
MODEL_SUFFIXES = (".caffemodel", ".caffemodel.h5", ".h5")
_NAMES_A_NET = re.compile(r"^\s*(?:train_)?net\s*:", re.MULTILINE)
_SOLVER_SCAN_LIMIT = 256 * 1024  # a solver is a few lines; a big file in the folder is a net or data


@dataclass
class Opened:
    """What ``open_path`` did: ``kind`` "net", "solver" or "model", and what to tell the user."""

    kind: str
    notices: list[str] = field(default_factory=list)
    weights: str | None = None  # a trained model to start from, when one was opened


def runs_folder() -> Path:
    """Where training writes snapshots of a net that has no folder of its own to write to (untitled,
    an example, read-only): ``$BARISTA_RUNS_DIR``, else ``<user data>/barista/runs``."""
    override = os.environ.get("BARISTA_RUNS_DIR")
    return Path(override) if override else data_paths.user_data_dir() / "runs"


def is_installed(path: str | os.PathLike[str]) -> bool:
    """True for a file inside the installed resources/ (the examples): read it, never write there."""
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(RESOURCES))
    except (OSError, ValueError):
        return False


def is_model(path: str | os.PathLike[str]) -> bool:
    return os.fspath(path).lower().endswith(MODEL_SUFFIXES)


def solver_net_path(solver: caffe_pb2.SolverParameter, solver_path: str | os.PathLike[str]) -> Path | None:
    """The net file a solver names (``net`` or ``train_net``): beside the solver, else in a folder
    above it (BVLC's solvers name nets from the Caffe root), else as given; beside it when nowhere."""
    name = solver.net or solver.train_net
    if not name:
        return None
    found = relative_paths.find(name, solver_path)
    return found.path if found is not None else Path(solver_path).parent / name


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def solvers_in(folder: str | os.PathLike[str]) -> Iterator[tuple[Path, caffe_pb2.SolverParameter]]:
    """The small prototxt files in ``folder`` that read as solvers naming a net, with their solvers.

    Files named like solvers come first; any other small prototxt that says ``net:`` after them.
    """
    try:
        candidates = [p for p in Path(folder).iterdir() if p.suffix in (".prototxt", ".pt") and p.is_file()]
    except OSError:
        return
    candidates.sort(key=lambda p: ("solver" not in p.name.lower(), p.name))
    for candidate in candidates:
        try:
            if candidate.stat().st_size > _SOLVER_SCAN_LIMIT:
                continue
            text = netio.read_file(candidate)
            if not _NAMES_A_NET.search(text):
                continue
            solver, _ = netio.load_solver_text(text, candidate)
        except (OSError, FormatError):
            continue
        yield candidate, solver


def solver_beside(net_path: str | os.PathLike[str]) -> Path | None:
    """The solver in the net's folder whose ``net:`` (or ``train_net:``) names this net, if any."""
    for candidate, solver in solvers_in(Path(net_path).parent):
        if _same_file(candidate, net_path):
            continue
        named = solver_net_path(solver, candidate)
        if named is not None and _same_file(named, net_path):
            return candidate
    return None


def example_title(net: caffe_pb2.NetParameter, path: str | os.PathLike[str]) -> str:
    return f"{net.name or Path(path).stem} (example)"


def open_path(
    doc: Document,
    path: str | os.PathLike[str],
    *,
    drop_unknown: bool = False,
) -> Opened:
    """Open the prototxt ``path`` into ``doc``: a net (with the solver beside it that trains it), or a
    solver and its net. (``app.models.open_any`` opens trained models too.)

    Raises OSError or FormatError (the net's error, unless the file looks like a solver) and then
    leaves the document as it was.
    """
    path = os.path.abspath(path)
    text = netio.read_file(path)
    solver_first = "solver" in Path(path).name.lower()
    try:
        if solver_first:
            return _open_solver(doc, text, path, drop_unknown)
        loaded = netio.load_net(text, path, drop_unknown=drop_unknown)
    except FormatError as first:
        try:
            if solver_first:
                loaded = netio.load_net(text, path, drop_unknown=drop_unknown)
            else:
                return _open_solver(doc, text, path, drop_unknown)
        except FormatError:
            raise first from None
    solver_path = solver_beside(path)
    solver: tuple[caffe_pb2.SolverParameter, str | None] = (caffe_pb2.SolverParameter(), None)
    if solver_path is not None:
        try:
            solver = netio.load_solver_text(netio.read_file(solver_path), solver_path)
        except (OSError, FormatError):
            solver_path = None
    _load_net(doc, loaded, path)
    _load_solver(doc, solver, os.fspath(solver_path) if solver_path else None)
    notices = loaded.notices()
    if solver_path is not None:
        if is_installed(solver_path):  # the example's: a copy too, written beside the net on Save
            notices.append(
                f"Solver: the example's {solver_path.name} (saved beside the net when you save it)"
            )
        else:
            notices.append(f"Solver: {solver_path.name} (it trains this net)")
    return Opened("net", notices)


def _load_net(doc: Document, loaded: netio.LoadedNet, path: str) -> None:
    if is_installed(path):  # an example: an untitled copy; its layout is read, never written back
        doc.load_net(
            loaded.net,
            None,
            loaded.text,
            layout=sidecar.load(path),
            title=example_title(loaded.net, path),
            origin=path,
            modified=loaded.upgraded or bool(loaded.dropped),
        )
    else:
        doc.load_net(loaded.net, path, loaded.text, modified=loaded.upgraded or bool(loaded.dropped))


def _load_solver(
    doc: Document, solver: tuple[caffe_pb2.SolverParameter, str | None], path: str | None
) -> None:
    doc.load_solver(solver[0], None if path is None or is_installed(path) else path, solver[1])


def _open_solver(doc: Document, text: str, path: str, drop_unknown: bool) -> Opened:
    solver, kept = netio.load_solver_text(text, path)
    net_path = solver_net_path(solver, path)
    if net_path is not None and not net_path.is_file():  # one line naming where it was looked for
        raise FormatError(path, relative_paths.not_found(solver.net or solver.train_net, path, "net"))
    notices: list[str] = []
    if net_path is not None:
        loaded = netio.load_net(netio.read_file(net_path), net_path, drop_unknown=drop_unknown)  # may raise
        _load_net(doc, loaded, os.path.abspath(net_path))
        notices = loaded.notices()
    else:  # the net inside the solver, or none: never the previous document's
        doc.load_net(solver.net_param if solver.HasField("net_param") else caffe_pb2.NetParameter(), None)
    _load_solver(doc, (solver, kept), path)
    return Opened("solver", notices)
