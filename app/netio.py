"""Prototxt in and out for the application: the one place app/ touches the text format.

``proto.textio`` and ``proto.upgrade`` do the work. The app keeps the user's own text (comments,
order, spacing) whenever it describes the net exactly, so the ``load_*`` functions also say
whether the text can be kept: not when the file needed upgrading from a legacy format. Then the
upgraded net is rendered afresh, below the file's own header comments, and the caller is told
(``LoadedNet.upgraded``): the document opens modified, with a notice.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from google.protobuf.message import Message

from proto import caffe_pb2
from proto.inputs import open_regular
from proto.text_patch import patch_text
from proto.textio import decode_text, message_to_text, net_to_text, parse_net, parse_solver, solver_to_text
from proto.upgrade import upgrade_net, upgrade_solver

PathLike = str | os.PathLike[str]

__all__ = [
    "LoadedNet",
    "edited_text",
    "load_net",
    "load_net_text",
    "load_solver_text",
    "net_to_text",
    "read_file",
    "solver_to_text",
]

_HEADER = re.compile(r"\A(?:[ \t]*(?:#[^\n]*)?\n)*")


@dataclass(frozen=True)
class LoadedNet:
    net: caffe_pb2.NetParameter
    text: str | None  # the text to keep (None: render the net)
    steps: tuple[str, ...] = ()  # the legacy upgrade's steps, when it needed one
    dropped: str = ""  # what was left out: the fields a Caffe fork added that this schema lacks

    @property
    def upgraded(self) -> bool:
        return bool(self.steps)

    def notices(self) -> list[str]:
        said = []
        if self.steps:
            said.append(
                "Upgraded from a legacy Caffe format (" + "; ".join(self.steps) + "): "
                "Save writes it in the current format"
            )
        if self.dropped:
            said.append(self.dropped)
        return said


def read_file(path: PathLike) -> str:
    """The file's text (UTF-8, a BOM dropped); OSError, or FormatError for a binary file."""
    with open_regular(path, "text", "a prototxt") as f:  # a FIFO, a device or a huge file refused
        return decode_text(f.read(), path)


def header_comments(text: str) -> str:
    """The comment lines (and blank lines) a file starts with."""
    match = _HEADER.match(text)
    return match.group(0) if match else ""


def edited_text(text: str, old: Message, new: Message) -> str:
    """The user's ``text`` (which reads as ``old``) after an edit made elsewhere, so that it reads as
    ``new``: only what changed is rewritten (``proto.text_patch``). Text the patch cannot follow
    becomes ``new`` rendered afresh below the file's own header comments."""
    patched = patch_text(text, old, new)
    if patched is not None:
        return patched
    header = header_comments(text)
    return (header if header.strip() else "") + message_to_text(new)


def load_net(text: str, path: PathLike = "<text>", *, drop_unknown: bool = False) -> LoadedNet:
    """The net ``text`` describes, upgraded if legacy, and the text to keep.

    Raises ``proto.errors.FormatError`` (with line and column) when the text does not parse; a
    Caffe fork's fields are ``proto.errors.UnknownFieldsError`` unless ``drop_unknown``.
    """
    dropped: list[str] = []
    if drop_unknown:
        from proto import textio

        with textio.dropping_unknown_fields(lambda e: dropped.append(e.dropped_notice())):
            net = parse_net(text, path, upgrade=False)
    else:
        net = parse_net(text, path, upgrade=False)
    result = upgrade_net(net, os.fspath(path))
    if not result.steps:
        kept = None if dropped else text
        return LoadedNet(result.net, kept, (), "; ".join(dropped))
    header = header_comments(text)
    kept = (header + net_to_text(result.net)) if header.strip() else None
    return LoadedNet(result.net, kept, result.steps, "; ".join(dropped))


def load_net_text(text: str, path: PathLike = "<text>") -> tuple[caffe_pb2.NetParameter, str | None]:
    """The net ``text`` describes (upgraded if legacy), and ``text`` itself if it is current Caffe."""
    loaded = load_net(text, path)
    return loaded.net, (None if loaded.steps else text)


def load_solver_text(text: str, path: PathLike = "<text>") -> tuple[caffe_pb2.SolverParameter, str | None]:
    solver = parse_solver(text, path, upgrade=False)
    result = upgrade_solver(solver, os.fspath(path))
    return result.solver, (None if result.steps else text)
