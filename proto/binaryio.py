"""Binary protobuf files: weights (.caffemodel), solver snapshots (.solverstate), blobs such as
mean files (.binaryproto), and the Datum records stored in LMDB.

Reading refuses what Caffe's ``ReadProtoFromBinaryFile`` would refuse (corrupt or truncated data,
missing required fields) and also what it would silently take as an empty message: an empty file,
a text prototxt, an HDF5 snapshot, or a protobuf of another kind (nothing but unknown fields).

Size: Caffe raises its coded-stream limit to 2 GiB; the Python runtime (upb) has no limit of its
own below that, and no message can be serialized beyond 2 GiB, so any caffemodel Caffe can write
reads here (a VGG-16 caffemodel, 528 MB, parses in well under a second; copying its blobs into
arrays is the caller's cost). A file past 2 GiB, or past the memory free, is refused by its size;
one past 16 MB is first checked by its head (not HDF5, not text, a first field the message has)
before the rest is read.
"""

from __future__ import annotations

import os
import re
from typing import TypeVar, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from proto import caffe_pb2
from proto.atomic import write_bytes_atomic
from proto.errors import FormatError
from proto.inputs import check_size, open_regular
from proto.textio import looks_binary, looks_like_prototxt, missing_required_fields, parse_text
from proto.upgrade import upgrade_net_as_needed

M = TypeVar("M", bound=Message)
PathLike = str | os.PathLike[str]

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_DECODE_PREFIX = re.compile(r"^Error parsing message(?: with type '[^']*')?\s*:?\s*")
# Past this size a file is checked by its first bytes before it is read whole; a smaller one is
# parsed at once, and the parser's own verdict is the more precise one.
HEAD_CHECK_PAST = 16 * 2**20
_HEAD = 1 << 16
_WIRE = {
    FieldDescriptor.TYPE_DOUBLE: 1,
    FieldDescriptor.TYPE_FIXED64: 1,
    FieldDescriptor.TYPE_SFIXED64: 1,
    FieldDescriptor.TYPE_FLOAT: 5,
    FieldDescriptor.TYPE_FIXED32: 5,
    FieldDescriptor.TYPE_SFIXED32: 5,
    FieldDescriptor.TYPE_STRING: 2,
    FieldDescriptor.TYPE_BYTES: 2,
    FieldDescriptor.TYPE_MESSAGE: 2,
    FieldDescriptor.TYPE_GROUP: 3,
}


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


def first_field_problem(head: bytes, descriptor: Descriptor) -> str | None:
    """Why ``head`` cannot start a binary message of ``descriptor``'s type (its first tag names no
    field of it, or with the wrong wire type), or None."""
    tag, shift = 0, 0
    for byte in head[:10]:
        tag |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    else:
        return "its first bytes are no protobuf field tag"
    number, wire = tag >> 3, tag & 7
    field = descriptor.fields_by_number.get(number)
    if field is None:
        return f"its first field (number {number}) is not one a {descriptor.name} has"
    packed = field.is_repeated and wire == 2
    if wire != _WIRE.get(field.type, 0) and not packed:
        return f"its first field, {field.name}, is stored as the wrong kind (wire type {wire})"
    return None


def _read_whole(path: PathLike, descriptor: Descriptor, *, text_allowed: bool = False) -> bytes:
    """The file's bytes, refused by size and, for a large one, by its head before the rest is read."""
    what = f"not a binary {descriptor.name}"
    with open_regular(path, "binary", f"a binary {descriptor.name}") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= HEAD_CHECK_PAST:
            return f.read()
        head = f.read(_HEAD)
        if head.startswith(_HDF5_SIGNATURE):
            raise FormatError(path, f"{what}: this is an HDF5 file (Caffe's .h5 snapshot format)")
        if looks_like_prototxt(head[: head.rfind(b"\n") + 1] or head):
            if not text_allowed:
                raise FormatError(path, f"{what}: looks like a text prototxt")
            check_size(path, size, "text", "a prototxt")
        elif (problem := first_field_problem(head, descriptor)) is not None:
            raise FormatError(path, f"{what}: {problem} (another kind of file?)")
        return head + f.read()


def read_binary(path: PathLike, message_type: type[M]) -> M:
    """Read a binary file as ``message_type``; OSError passes through, bad content is FormatError."""
    data = _read_whole(path, cast(Descriptor, message_type.DESCRIPTOR))
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
    data = _read_whole(path, cast(Descriptor, caffe_pb2.NetParameter.DESCRIPTOR), text_allowed=True)
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
