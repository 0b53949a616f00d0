"""The net and solver a run trained, saved beside its snapshots in a runs folder, so that a snapshot
opened later finds its net (``PREFIX.prototxt`` beside ``PREFIX_iter_N.caffemodel``, as
``app.models.net_beside`` looks for it) and the solver that trains it (``PREFIX_solver.prototxt``,
whose ``net:`` names that file). Qt-free; runs in the worker thread when the first snapshot lands.
"""

from __future__ import annotations

import os
from pathlib import Path

from app import netio
from app.fields import copy_message
from proto.atomic import write_text_atomic

HEADER = "# The {what} run {run} trained with (saved by Barista beside its snapshots)\n"


def names(prefix: str) -> tuple[str, str]:
    """The file names of the net and of the solver for snapshots named ``PREFIX_iter_N``."""
    stem = Path(prefix).name or "net"
    return f"{stem}.prototxt", f"{stem}_solver.prototxt"


def save_beside_snapshots(solver, folder: str | os.PathLike[str]) -> list[Path]:
    """Write the trained net and its solver into ``folder`` (the job's ``solver``, whose net is inlined),
    unless they are there already; the files written. Raises ``OSError`` (a ``WriteError``)."""
    folder = Path(folder)
    net_name, solver_name = names(solver.snapshot_prefix)
    run = folder.name
    written = []
    nets = [n for n in (solver.net_param, solver.train_net_param) if n.ByteSize()]
    if nets and not (folder / net_name).exists():
        text = HEADER.format(what="net", run=run)
        write_text_atomic(folder / net_name, text + netio.net_to_text(nets[0]))
        written.append(folder / net_name)
    if not (folder / solver_name).exists():
        kept = copy_message(solver)
        train_net = kept.HasField("train_net_param")
        for name in ("net_param", "train_net_param", "net", "train_net", "weights", "solver_mode"):
            kept.ClearField(name)
        if nets:
            setattr(kept, "train_net" if train_net else "net", net_name)
        kept.snapshot_prefix = Path(solver.snapshot_prefix).name or "net"
        text = HEADER.format(what="solver", run=run)
        write_text_atomic(folder / solver_name, text + netio.solver_to_text(kept))
        written.append(folder / solver_name)
    return written
