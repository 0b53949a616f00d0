"""Prototxt: read and write NetParameter and SolverParameter as Caffe's text format.

Reading is Caffe's ``ReadNetParamsFromTextFileOrDie`` / ``ReadSolverParamsFromTextFileOrDie``:
parse (every field known, no field given twice, required fields present), then upgrade legacy
content unless ``upgrade=False``. A legacy file logs a warning on the ``proto.upgrade`` logger; a caller
that needs the details reads with ``upgrade=False`` and calls ``proto.upgrade.upgrade_net``.

Fields our schema lacks (Caffe forks add some) are one ``UnknownFieldsError`` listing them all;
``drop_unknown=True`` reads the file without exactly those fields (logged on ``proto.textio``), as
does every read inside ``dropping_unknown_fields(report)`` (the CLI's ``--drop-unknown-fields``).

Writing matches Caffe's ``WriteProtoToTextFile`` (C++ ``TextFormat::Print``): fields in number
order, two-space indent, floats in the shortest form that reads back to the same float32, and
non-ASCII bytes in strings as octal escapes (``as_utf8=True`` keeps them readable instead; Caffe
reads both). Files are replaced atomically.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar, cast

from google.protobuf import text_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from proto import caffe_pb2, unknown_fields
from proto.atomic import write_text_atomic
from proto.depth import depth_problem
from proto.errors import FormatError, UnknownFieldsError
from proto.inputs import open_regular
from proto.upgrade import upgrade_net_as_needed, upgrade_snapshot_prefix, upgrade_solver_as_needed

M = TypeVar("M", bound=Message)
PathLike = str | os.PathLike[str]

# Bytes that never occur in a text file: C0 controls other than tab, newline, VT, FF, CR.
_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\v\f\r")
_FIRST_FIELD = re.compile(r"(?:\s|#[^\n]*)*[A-Za-z_][A-Za-z0-9_]*\s*[:{<]")
_LOCATION = re.compile(r"^\d+(?::\d+)? : ")
_LOG = logging.getLogger(__name__)
# Set inside ``dropping_unknown_fields``: every read drops unknown fields and reports them here.
_DROPPING: ContextVar[Callable[[UnknownFieldsError], None] | None] = ContextVar("_DROPPING", default=None)


@contextlib.contextmanager
def dropping_unknown_fields(report: Callable[[UnknownFieldsError], None]) -> Iterator[None]:
    """Every prototxt read in this block drops the fields our schema lacks, calling ``report``
    with what it dropped (``error.dropped_notice()`` says it in one line)."""
    token = _DROPPING.set(report)
    try:
        yield
    finally:
        _DROPPING.reset(token)


def looks_binary(data: bytes) -> bool:
    """True for data no text editor would write: a NUL anywhere, or control bytes near the start."""
    head = data[:8192]
    return b"\0" in data or len(head.translate(None, _CONTROL)) != len(head)


def looks_like_prototxt(data: bytes) -> bool:
    """True when ``data`` is UTF-8 text whose first token is a field name (``name:``, ``layer {``)."""
    if looks_binary(data):
        return False
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return False
    return _FIRST_FIELD.match(text) is not None


def decode_text(data: bytes, path: PathLike = "<bytes>") -> str:
    """UTF-8 text of a prototxt (a leading BOM is dropped); FormatError for binary data."""
    if looks_binary(data):
        raise FormatError(path, "not a text prototxt (binary data?)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        message = f"not a text prototxt (binary data?): invalid UTF-8 byte 0x{data[e.start]:02x}"
        raise FormatError(path, message, line, column) from None


def parse_text(
    text: str | bytes, message_type: type[M], path: PathLike = "<string>", *, drop_unknown: bool = False
) -> M:
    """Parse one message of ``message_type`` as C++ ``TextFormat::Parse`` would accept it.

    Fields the schema lacks raise one ``UnknownFieldsError`` naming each; ``drop_unknown=True``
    (or a ``dropping_unknown_fields`` block) reads the text without them instead.
    """
    if isinstance(text, bytes):
        text = decode_text(text, path)
    deep = depth_problem(text)  # before the parsers below recurse into it
    if deep is not None:
        raise FormatError(path, *deep)
    message = message_type()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as e:
        unknown = unknown_fields.find(text, cast(Descriptor, message_type.DESCRIPTOR))
        if not unknown:
            raise FormatError(path, _parse_error_message(e, text), e.GetLine(), e.GetColumn()) from e
        without = unknown_fields.blank(text, unknown)
        message = message_type()
        try:
            text_format.Parse(without, message)
        except text_format.ParseError as e2:  # a mistake besides the unknown fields: that one first
            raise FormatError(path, _parse_error_message(e2, without), e2.GetLine(), e2.GetColumn()) from e2
        if message.ListFields() == []:  # nothing left: the wrong kind of file, not a fork's fields
            raise FormatError(path, _parse_error_message(e, text), e.GetLine(), e.GetColumn()) from e
        error = UnknownFieldsError(path, unknown)
        report = _DROPPING.get()
        if not drop_unknown and report is None:
            raise error from None
        if report is not None:
            report(error)
        else:
            _LOG.warning("%s", error.dropped_notice())
    if not message.IsInitialized():
        raise FormatError(path, f"Message missing required fields: {missing_required_fields(message)}")
    return message


def missing_required_fields(message: Message) -> str:
    """``"layer[0].clip_param.max, ..."`` for an uninitialized message."""
    find: Any = getattr(message, "FindInitializationErrors", None)  # not in the typing stubs
    return ", ".join(find()) if find is not None else "(unknown)"


def read_text(path: PathLike, message_type: type[M], *, drop_unknown: bool = False) -> M:
    """Read a text file as ``message_type``; OSError passes through, bad content is FormatError."""
    with open_regular(path, "text", "a prototxt") as f:  # a FIFO or a device is refused, not waited on
        data = f.read()
    return parse_text(data, message_type, path, drop_unknown=drop_unknown)


def parse_net(
    text: str | bytes, path: PathLike = "<string>", *, upgrade: bool = True, drop_unknown: bool = False
) -> caffe_pb2.NetParameter:
    net = parse_text(text, caffe_pb2.NetParameter, path, drop_unknown=drop_unknown)
    return _upgraded_net(net, path) if upgrade else net


def parse_solver(
    text: str | bytes, path: PathLike = "<string>", *, upgrade: bool = True, drop_unknown: bool = False
) -> caffe_pb2.SolverParameter:
    solver = parse_text(text, caffe_pb2.SolverParameter, path, drop_unknown=drop_unknown)
    return _upgraded_solver(solver, path) if upgrade else solver


def read_net(path: PathLike, *, upgrade: bool = True, drop_unknown: bool = False) -> caffe_pb2.NetParameter:
    """A net prototxt, upgraded from V0/V1/legacy fields as Caffe does unless ``upgrade=False``."""
    net = read_text(path, caffe_pb2.NetParameter, drop_unknown=drop_unknown)
    return _upgraded_net(net, path) if upgrade else net


def read_solver(
    path: PathLike, *, upgrade: bool = True, resolve_snapshot_prefix: bool = False, drop_unknown: bool = False
) -> caffe_pb2.SolverParameter:
    """A solver prototxt, with ``solver_type`` upgraded to ``type`` unless ``upgrade=False``.

    ``resolve_snapshot_prefix=True`` also applies Caffe's default prefix (the solver file's path
    without extension, or the file's stem inside a prefix that is a folder): what a trainer
    needs, and what an editor should not write back into the user's file.
    """
    solver = read_text(path, caffe_pb2.SolverParameter, drop_unknown=drop_unknown)
    if upgrade:
        solver = _upgraded_solver(solver, path)
    if resolve_snapshot_prefix:
        solver = upgrade_snapshot_prefix(solver, path)
    return solver


def message_to_text(message: Message, *, as_utf8: bool = False) -> str:
    """Any message in Caffe's prototxt style (see the module docstring)."""
    return text_format.MessageToString(message, as_utf8=as_utf8)


def net_to_text(param: caffe_pb2.NetParameter, *, as_utf8: bool = False) -> str:
    return message_to_text(param, as_utf8=as_utf8)


def solver_to_text(param: caffe_pb2.SolverParameter, *, as_utf8: bool = False) -> str:
    return message_to_text(param, as_utf8=as_utf8)


def write_net(path: PathLike, param: caffe_pb2.NetParameter, *, as_utf8: bool = False) -> None:
    write_text_atomic(path, net_to_text(param, as_utf8=as_utf8))


def write_solver(path: PathLike, param: caffe_pb2.SolverParameter, *, as_utf8: bool = False) -> None:
    write_text_atomic(path, solver_to_text(param, as_utf8=as_utf8))


def _upgraded_net(net: caffe_pb2.NetParameter, path: PathLike) -> caffe_pb2.NetParameter:
    return upgrade_net_as_needed(net, os.fspath(path), copy=False)


def _upgraded_solver(solver: caffe_pb2.SolverParameter, path: PathLike) -> caffe_pb2.SolverParameter:
    return upgrade_solver_as_needed(solver, os.fspath(path))


def _parse_error_message(error: text_format.ParseError, text: str) -> str:
    # str(error) is "LINE:COL : [<'the source line': >]message"; the location goes in front of
    # FormatError's line, and the echoed source line would make it two lines' worth.
    message = _LOCATION.sub("", str(error), count=1)
    if message.startswith("'"):
        lines = set(text.split("\n"))
        end = message.find("': ")
        while end != -1:
            if message[1:end] in lines:
                return message[end + 3 :]
            end = message.find("': ", end + 1)
    return message
