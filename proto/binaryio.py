"""Binary protobuf files: weights (.caffemodel), solver snapshots (.solverstate), blobs such as
mean files (.binaryproto), and the Datum records stored in LMDB.

Reading refuses what Caffe's ``ReadProtoFromBinaryFile`` would refuse (corrupt or truncated data,
missing required fields) and also what it would silently take as an empty message: an empty file,
a text prototxt, an HDF5 snapshot, or a protobuf of another kind (nothing but unknown fields).

Size: Caffe raises its coded-stream limit to 2 GiB; the Python runtime (upb) has no limit of its
own below that, and no message can be serialized beyond 2 GiB, so any caffemodel Caffe can write
reads here (a VGG-16 caffemodel, 528 MB, parses in well under a second; copying its blobs into
arrays is the caller's cost).
"""

from __future__ import annotations

import os
import re
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from proto import caffe_pb2
from proto.atomic import write_bytes_atomic
from proto.errors import FormatError
from proto.inputs import open_regular
from proto.textio import looks_binary, looks_like_prototxt, missing_required_fields, parse_text
from proto.upgrade import upgrade_net_as_needed

M = TypeVar("M", bound=Message)
PathLike = str | os.PathLike[str]

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_DECODE_PREFIX = re.compile(r"^Error parsing message(?: with type '[^']*')?\s*:?\s*")


def parse_binary(data: bytes, message_type: type[M], path: PathLike = "<bytes>") -> M:
    """One binary message of ``message_type``; FormatError says what was expected and what was found."""
    what = f"not a binary {message_type.DESCRIPTOR.name}"
    if data.startswith(_HDF5_SIGNATURE):
        raise FormatError(path, f"{what}: this is an HDF5 file (Caffe's .h5 snapshot format)")
    if looks_like_prototxt(data):
        raise FormatError(path, f"{what}: looks like a text prototxt")
    message = message_type()
    try:
        message.ParseFromString(data)
    except DecodeError as e:
        reason = _DECODE_PREFIX.sub("", str(e)) or "invalid protobuf data"
        raise FormatError(path, f"{what}: {reason} (truncated, or not a protobuf file?)") from e
    if not message.IsInitialized():
        raise FormatError(path, f"{what}: missing required fields: {missing_required_fields(message)}")
    if data and not message.ListFields():
        raise FormatError(path, f"{what}: none of its fields are present (another kind of file?)")
    return message


def read_binary(path: PathLike, message_type: type[M]) -> M:
    """Read a binary file as ``message_type``; OSError passes through, bad content is FormatError."""
    with open_regular(path) as f:
        data = f.read()
    if not data:
        raise FormatError(path, f"not a binary {message_type.DESCRIPTOR.name}: the file is empty")
    return parse_binary(data, message_type, path)


def write_binary(path: PathLike, message: Message) -> None:
    write_bytes_atomic(path, message.SerializeToString())


def read_caffemodel(path: PathLike, *, upgrade: bool = True) -> caffe_pb2.NetParameter:
    """Trained weights, upgraded as Caffe's ``ReadNetParamsFromBinaryFileOrDie`` does."""
    net = read_binary(path, caffe_pb2.NetParameter)
    return upgrade_net_as_needed(net, os.fspath(path), copy=False) if upgrade else net


def write_caffemodel(path: PathLike, net: caffe_pb2.NetParameter) -> None:
    write_binary(path, net)


def read_net_any(path: PathLike, *, upgrade: bool = True) -> caffe_pb2.NetParameter:
    """A NetParameter from a binary caffemodel or a text prototxt, whichever the file holds.

    Caffe's ``copy_from`` takes binary only; accepting text too lets ``--weights`` name a
    prototxt that carries ``blobs``. A file without NUL or control bytes is read as text.
    """
    with open_regular(path) as f:
        data = f.read()
    if not data:
        raise FormatError(path, "not a NetParameter: the file is empty")
    if looks_binary(data):
        net = parse_binary(data, caffe_pb2.NetParameter, path)
    else:
        net = parse_text(data, caffe_pb2.NetParameter, path)
    return upgrade_net_as_needed(net, os.fspath(path), copy=False) if upgrade else net


def read_solverstate(path: PathLike) -> caffe_pb2.SolverState:
    return read_binary(path, caffe_pb2.SolverState)


def write_solverstate(path: PathLike, state: caffe_pb2.SolverState) -> None:
    write_binary(path, state)


def read_blob(path: PathLike) -> caffe_pb2.BlobProto:
    """A ``.binaryproto`` blob, e.g. a mean file."""
    return read_binary(path, caffe_pb2.BlobProto)


def write_blob(path: PathLike, blob: caffe_pb2.BlobProto) -> None:
    write_binary(path, blob)


def parse_datum(data: bytes, source: str = "<datum>") -> caffe_pb2.Datum:
    """One Datum, as stored under a key of a Caffe LMDB (``source`` names it in errors)."""
    return parse_binary(data, caffe_pb2.Datum, source)


def datum_to_bytes(datum: caffe_pb2.Datum) -> bytes:
    return datum.SerializeToString()
