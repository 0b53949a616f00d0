"""Blob: an N-d array of data and one of gradients (diff), as Caffe's Blob.

Shapes are tuples of ints; a loss is a 0-axis blob of count 1. ``data`` and ``diff`` are arrays
of the blob's array module (numpy or cupy). Layers write into them in place (``out=`` or
``[...] =``) so that shared parameters and in-place layers see one storage.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from types import ModuleType
from typing import Any

import numpy as np

from engine import backend
from proto import caffe_pb2

MAX_BLOB_AXES = 32
# Caffe CHECKs a blob's count against INT_MAX; refusing here, before any allocation, turns an absurd
# shape (a typo'd dim, a huge pad) into a message instead of an attempt to allocate terabytes.
MAX_BLOB_COUNT = 2**31 - 1


def as_shape(shape: Any) -> tuple[int, ...]:
    """Accept a tuple/list of ints, a BlobShape message, or ints given one by one."""
    if isinstance(shape, caffe_pb2.BlobShape):
        dims: Iterable[Any] = shape.dim
    elif isinstance(shape, int | np.integer):
        dims = (shape,)
    else:
        dims = shape
    out = tuple(int(d) for d in dims)
    # The common case, cheaply (this runs at every reshape of every layer, every iteration).
    if len(out) <= MAX_BLOB_AXES and (not out or (min(out) > 0 and math.prod(out) <= MAX_BLOB_COUNT)):
        return out
    if len(out) > MAX_BLOB_AXES:
        raise ValueError(f"blob shape {out} has more than {MAX_BLOB_AXES} axes")
    if any(d < 0 for d in out):
        raise ValueError(f"blob shape {out} has a negative dimension")
    # Python ints, so a product past int64 does not wrap around; a dimension must fit too, even
    # beside a 0 (Caffe's dims are ints), as must what numpy multiplies out of the nonzero ones.
    if (
        math.prod(out) > MAX_BLOB_COUNT
        or any(d > MAX_BLOB_COUNT for d in out)
        or math.prod(d for d in out if d) >= 2**63
    ):
        raise ValueError(f"blob shape {shape_string(out)} exceeds the limit of {MAX_BLOB_COUNT} values")
    return out


def shape_string(shape: tuple[int, ...]) -> str:
    """Caffe's way of printing a shape: '2 3 4 5 (120)'."""
    return "".join(f"{d} " for d in shape) + f"({math.prod(shape)})"


class Blob:
    def __init__(self, shape: Any = (), dtype: Any = np.float32, xp: ModuleType = np) -> None:
        self.dtype = np.dtype(dtype)
        self.xp = xp
        self.shape: tuple[int, ...] = ()
        self.data: Any = xp.zeros((), self.dtype)
        self.diff: Any = xp.zeros((), self.dtype)
        self.reshape(shape)

    # --- shape -------------------------------------------------------------------------------
    def reshape(self, *shape: Any) -> None:
        """Give the blob a new shape; values are kept only if the shape is unchanged."""
        new = as_shape(shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
        if new == self.shape and self.data.shape == new:
            return
        self.shape = new
        self.data = self.xp.zeros(new, self.dtype)
        self.diff = self.xp.zeros(new, self.dtype)

    def reshape_like(self, other: Blob) -> None:
        self.reshape(other.shape)

    @property
    def num_axes(self) -> int:
        return len(self.shape)

    def count(self, start: int = 0, end: int | None = None) -> int:
        dims = self.shape[start:end]
        return int(np.prod(dims, dtype=np.int64)) if dims else 1

    def canonical_axis_index(self, axis: int) -> int:
        """Map a possibly negative axis to 0..num_axes-1, raising as Caffe CHECKs."""
        n = self.num_axes
        if not -n <= axis < n:
            raise ValueError(f"axis {axis} out of range for {n}-D blob with shape {shape_string(self.shape)}")
        return axis + n if axis < 0 else axis

    def shape_at(self, axis: int) -> int:
        return self.shape[self.canonical_axis_index(axis)]

    def legacy_shape(self, index: int) -> int:
        """Caffe's LegacyShape: axes beyond the blob's own count as 1 (only for <= 4 axes)."""
        if self.num_axes > 4:
            raise ValueError(f"legacy accessors need a blob of at most 4 axes, got {self.shape}")
        if index >= self.num_axes or index < -self.num_axes:
            return 1
        return self.shape[index]

    num = property(lambda self: self.legacy_shape(0))
    channels = property(lambda self: self.legacy_shape(1))
    height = property(lambda self: self.legacy_shape(2))
    width = property(lambda self: self.legacy_shape(3))

    # --- storage -----------------------------------------------------------------------------
    def share_data(self, other: Blob) -> None:
        if self.count() != other.count():
            raise ValueError(f"cannot share data of {other.shape} with {self.shape}")
        self.data = other.data.reshape(self.shape)

    def share_diff(self, other: Blob) -> None:
        if self.count() != other.count():
            raise ValueError(f"cannot share diff of {other.shape} with {self.shape}")
        self.diff = other.diff.reshape(self.shape)

    def to(self, xp: ModuleType) -> None:
        """Move data and diff to another array module (numpy <-> cupy)."""
        if xp is self.xp:
            return
        self.data = backend.to_module(self.data, xp)
        self.diff = backend.to_module(self.diff, xp)
        self.xp = xp

    def asum_data(self) -> float:
        return float(self.xp.abs(self.data).sum())

    def asum_diff(self) -> float:
        return float(self.xp.abs(self.diff).sum())

    # --- BlobProto ---------------------------------------------------------------------------
    def shape_equals(self, proto: caffe_pb2.BlobProto) -> bool:
        if any(proto.HasField(f) for f in ("num", "channels", "height", "width")):
            return self.num_axes <= 4 and (
                self.legacy_shape(-4),
                self.legacy_shape(-3),
                self.legacy_shape(-2),
                self.legacy_shape(-1),
            ) == (proto.num, proto.channels, proto.height, proto.width)
        return self.shape == tuple(proto.shape.dim)

    def from_proto(self, proto: caffe_pb2.BlobProto, reshape: bool = True) -> None:
        shape = proto_shape(proto)
        if reshape:
            self.reshape(shape)
        elif not self.shape_equals(proto):
            raise ValueError(
                f"shape mismatch: blob is {shape_string(self.shape)}, proto is {shape_string(shape)}"
            )
        # Caffe reads double_data when it has any values, else data, and either must fill the blob.
        values = proto.double_data if len(proto.double_data) else proto.data
        if len(values) != self.count():
            raise ValueError(f"BlobProto has {len(values)} values for shape {shape_string(self.shape)}")
        if len(values):
            self.data[...] = self.xp.asarray(np.asarray(values, self.dtype).reshape(self.shape))
        for field in ("double_diff", "diff"):
            values = getattr(proto, field)
            if len(values):
                self.diff[...] = self.xp.asarray(np.asarray(values, self.dtype).reshape(self.shape))
                break

    def to_proto(self, write_diff: bool = False) -> caffe_pb2.BlobProto:
        proto = caffe_pb2.BlobProto()
        proto.shape.dim.extend(self.shape)
        double = self.dtype == np.float64
        set_packed(proto, "double_data" if double else "data", backend.to_host(self.data))
        if write_diff:
            set_packed(proto, "double_diff" if double else "diff", backend.to_host(self.diff))
        return proto

    def __repr__(self) -> str:
        return f"Blob({shape_string(self.shape)}, {self.dtype})"


def proto_shape(proto: caffe_pb2.BlobProto) -> tuple[int, ...]:
    """The shape a BlobProto describes, from `shape` or from the legacy 4-D fields."""
    if any(proto.HasField(f) for f in ("num", "channels", "height", "width")):
        return (proto.num, proto.channels, proto.height, proto.width)
    return as_shape(proto.shape)


def proto_to_array(proto: caffe_pb2.BlobProto, dtype: Any = np.float32) -> np.ndarray:
    """A numpy array with a BlobProto's data (the pycaffe ``blobproto_to_array``)."""
    values = proto.double_data if len(proto.double_data) else proto.data
    return np.asarray(values, dtype).reshape(proto_shape(proto))


def array_to_proto(array: Any, diff: Any = None) -> caffe_pb2.BlobProto:
    proto = caffe_pb2.BlobProto()
    host = backend.to_host(array)
    proto.shape.dim.extend(host.shape)
    set_packed(proto, "data", host)
    if diff is not None:
        set_packed(proto, "diff", backend.to_host(diff))
    return proto


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def set_packed(proto: caffe_pb2.BlobProto, field: str, values: Any) -> None:
    """Appends a host array's values to a packed float (double) field of ``proto`` as wire bytes:
    the message keeps them as 4 (8) bytes each, where ``extend(values.tolist())`` made a Python
    float of each first (24 bytes each, and 8 for its list slot: 32 bytes a value for a moment,
    over 1 GB for CaffeNet's fc6 weights)."""
    descriptor = caffe_pb2.BlobProto.DESCRIPTOR.fields_by_name[field]
    dtype = "<f8" if descriptor.type == descriptor.TYPE_DOUBLE else "<f4"
    payload = np.ascontiguousarray(values, dtype).tobytes()
    if payload:
        proto.MergeFromString(_varint(descriptor.number << 3 | 2) + _varint(len(payload)) + payload)
