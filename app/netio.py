"""Prototxt in and out for the application: the one place app/ touches the text format.

``proto.textio`` and ``proto.upgrade`` do the work. The app keeps the user's own text (comments,
order, spacing) whenever it describes the net exactly, so the ``load_*`` functions also say
whether the text can be kept: not when the file needed upgrading from a legacy format.
"""

from __future__ import annotations

import os

from proto import caffe_pb2
from proto.textio import decode_text, net_to_text, parse_net, parse_solver, solver_to_text
from proto.upgrade import upgrade_net, upgrade_solver

PathLike = str | os.PathLike[str]

__all__ = ["load_net_text", "load_solver_text", "net_to_text", "read_file", "solver_to_text"]


def read_file(path: PathLike) -> str:
    """The file's text (UTF-8, a BOM dropped); OSError, or FormatError for a binary file."""
    with open(path, "rb") as f:
        return decode_text(f.read(), path)


def load_net_text(text: str, path: PathLike = "<text>") -> tuple[caffe_pb2.NetParameter, str | None]:
    """The net ``text`` describes (upgraded if legacy), and ``text`` itself if it is current Caffe.

    Raises ``proto.errors.FormatError`` (with line and column) when the text does not parse.
    """
    net = parse_net(text, path, upgrade=False)
    result = upgrade_net(net, os.fspath(path))
    return result.net, (None if result.steps else text)


def load_solver_text(text: str, path: PathLike = "<text>") -> tuple[caffe_pb2.SolverParameter, str | None]:
    solver = parse_solver(text, path, upgrade=False)
    result = upgrade_solver(solver, os.fspath(path))
    return result.solver, (None if result.steps else text)
