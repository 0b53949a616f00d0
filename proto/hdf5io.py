"""Caffe's HDF5 files: weights (``.caffemodel.h5``), solver snapshots (``.solverstate.h5``) and the
rows an HDF5Output layer writes.

The layouts are facts of the format, as Caffe's ``Net::ToHDF5`` and ``SGDSolver`` write them:

- weights: a group ``data`` holding one group per layer of the net (layers without parameters
  included, empty), and in it one dataset per parameter the layer owns, named ``0``, ``1``, ...
  with the blob's shape; with ``snapshot_diff`` a group ``diff`` of the same form holds every
  parameter's gradient (shared ones too).
- solver state: ``iter`` and ``current_step`` as one-element int32 datasets, ``learned_net`` as a
  scalar NUL-terminated string, and a group ``history`` with the history blobs ``0``, ``1``, ...
- HDF5Output: datasets ``data`` and ``label``.

Arrays are written in the net's float type (float32, or float64 for a double net), atomically
(built in memory, then written by proto.atomic: a killed write or a full disk leaves the old file
or none, never a torn one under the final name). Readers give clear ``FormatError``s naming the
file and the dataset.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import h5py
import numpy as np

from proto.atomic import check_target, write_bytes_atomic
from proto.errors import FormatError
from proto.inputs import check_regular, open_regular

PathLike = str | os.PathLike[str]
SIGNATURE = b"\x89HDF\r\n\x1a\n"


def is_hdf5(path: PathLike) -> bool:
    """True when the file is HDF5 (its signature at 0, 512, 1024, ... as HDF5's own check); False
    for anything but a regular file (a FIFO or /dev/zero is never read)."""
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            offset = 0
            while offset + len(SIGNATURE) <= size:
                f.seek(offset)
                head = f.read(len(SIGNATURE))
                if len(head) < len(SIGNATURE):
                    return False
                if head == SIGNATURE:
                    return True
                offset = 512 if offset == 0 else offset * 2
            return False
    except OSError:
        return False


def _open(path: PathLike, mode: str) -> h5py.File:
    try:
        check_regular(path)
        return h5py.File(os.fspath(path), mode)
    except (OSError, ValueError) as exc:
        raise FormatError(path, f"cannot open the HDF5 file: {exc}") from exc


@contextmanager
def _create(path: PathLike) -> Iterator[h5py.File]:
    """A new HDF5 file that replaces ``path`` when the block ends without error (never a torn one).

    The file is built in memory (HDF5's core driver, no backing store) and its image written by
    proto.atomic: HDF5 never writes to the disk itself, so a full disk is one WriteError from the
    atomic writer, never HDF5 failing inside h5py's object finalisers (~100 ignored tracebacks,
    then a segfault at exit) with its temporary file left behind. The cost is one copy of the
    file in memory while it is written."""
    name = f"{os.path.basename(os.fspath(path))} (in memory)"  # the core driver's label: nothing opens it
    try:
        with h5py.File(name, "w", driver="core", backing_store=False) as f:
            yield f
            f.flush()
            image = f.id.get_file_image()
    except (OSError, ValueError, RuntimeError) as exc:
        message = str(exc).replace(name, os.fspath(path))
        raise FormatError(path, f"cannot write the HDF5 file: {message}") from exc
    write_bytes_atomic(path, image)


class _Sink(io.RawIOBase):
    """The file HDF5 writes through: a write that fails (a full disk) is remembered and reported as
    done, so HDF5's own state stays whole (a failed write inside it ends, at exit, in h5py's
    finalisers failing and a segfault); the caller raises the remembered error afterwards."""

    def __init__(self, raw: Any) -> None:
        super().__init__()
        self.raw = raw
        self.error: OSError | None = None

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self.raw.readinto(buffer)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def write(self, data: Any) -> int:
        if self.error is None:
            try:
                return self.raw.write(data)
            except OSError as exc:
                self.error = exc
        return len(memoryview(data))

    def truncate(self, size: int | None = None) -> int:
        if self.error is None:
            try:
                return self.raw.truncate(size)
            except OSError as exc:
                self.error = exc
        return self.tell() if size is None else size

    def flush(self) -> None:
        pass


@contextmanager
def appending(path: PathLike, fresh: bool) -> Iterator[h5py.File]:
    """An HDF5 file on disk to add to (HDF5Output's rows, batch by batch), ``fresh`` to start it
    anew. A link at ``path`` is refused; a failed write (a full disk) is one FormatError after the
    block, the file removed, never HDF5 failing inside h5py."""
    check_target(path)
    flags = os.O_RDWR | os.O_CREAT | (os.O_TRUNC if fresh else 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        raw = os.fdopen(os.open(path, flags, 0o666), "r+b", buffering=0)
    except OSError as exc:
        raise FormatError(path, f"cannot write the HDF5 file: {exc.strerror or exc}") from exc
    sink = _Sink(raw)
    try:
        with raw, h5py.File(sink, "w" if fresh else "a") as f:
            yield f
    except (OSError, ValueError, RuntimeError) as exc:
        raise FormatError(path, f"cannot write the HDF5 file: {exc}") from exc
    if sink.error is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)  # a torn file: HDF5 wrote past what the disk took
        raise FormatError(path, f"cannot write the HDF5 file: {sink.error.strerror or sink.error}")


def _float_array(array: np.ndarray) -> np.ndarray:
    host = np.asarray(array)
    return host if host.dtype in (np.float32, np.float64) else host.astype(np.float32)


def save_int(group: h5py.Group, name: str, value: int) -> None:
    group.create_dataset(name, data=np.array([value], np.int32))


def save_string(group: h5py.Group, name: str, value: str) -> None:
    """A scalar fixed-length string dataset, NUL-terminated, as HDF5's H5LTmake_dataset_string."""
    raw = value.encode("utf-8") + b"\0"
    string_type = h5py.h5t.C_S1.copy()
    string_type.set_size(len(raw))
    string_type.set_strpad(h5py.h5t.STR_NULLTERM)
    space = h5py.h5s.create(h5py.h5s.SCALAR)
    dataset = h5py.h5d.create(group.id, name.encode("utf-8"), string_type, space)
    dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array(raw, dtype=f"S{len(raw)}"), mtype=string_type)


def load_int(group: h5py.Group, name: str, path: PathLike) -> int:
    item = group.get(name)
    if not isinstance(item, h5py.Dataset) or item.dtype.kind not in "iu" or item.size < 1:
        raise FormatError(path, f"no integer dataset '{name}' (not a Caffe HDF5 solver state?)")
    return int(np.asarray(item[()]).reshape(-1)[0])


def load_string(group: h5py.Group, name: str, path: PathLike) -> str:
    item = group.get(name)
    if not isinstance(item, h5py.Dataset) or item.dtype.kind not in "SOU":
        raise FormatError(path, f"no string dataset '{name}'")
    value = np.asarray(item[()]).reshape(-1)[0]
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value).split("\0", 1)[0]


def load_array(group: h5py.Group, name: str, path: PathLike) -> np.ndarray:
    item = group.get(name)
    if not isinstance(item, h5py.Dataset):
        raise FormatError(path, f"no dataset '{group.name.rstrip('/')}/{name}'")
    if item.dtype.kind not in "biuf":
        raise FormatError(path, f"dataset '{item.name}' is of type {item.dtype}, not numbers")
    return np.asarray(item[()])


# --- weights -------------------------------------------------------------------------------------
@dataclass
class LayerWeights:
    """One layer's entry: ``data[i]`` is None for a parameter the layer shares from another."""

    name: str
    data: Sequence[np.ndarray | None]
    diff: Sequence[np.ndarray] | None = None


def write_weights(path: PathLike, layers: Sequence[LayerWeights], write_diff: bool = False) -> None:
    """Write ``data/<layer>/<i>`` (and ``diff/<layer>/<i>``) for every layer, in order."""
    with _create(path) as f:
        data = f.create_group("data")
        diff = f.create_group("diff") if write_diff else None
        for layer in layers:
            group = data.create_group(layer.name)
            for i, values in enumerate(layer.data):
                if values is not None:
                    group.create_dataset(str(i), data=_float_array(values))
            if diff is not None:
                diff_group = diff.create_group(layer.name)
                for i, values in enumerate(layer.diff or ()):
                    diff_group.create_dataset(str(i), data=_float_array(values))


def read_weights(path: PathLike) -> dict[str, dict[str, np.ndarray]]:
    """Every layer group under ``data``: layer name -> {dataset name: array}."""
    with _open(path, "r") as f:
        data = f.get("data")
        if not isinstance(data, h5py.Group):
            raise FormatError(path, "no group 'data' (not a Caffe HDF5 weights file?)")
        out: dict[str, dict[str, np.ndarray]] = {}
        for name, group in data.items():
            if not isinstance(group, h5py.Group):
                raise FormatError(path, f"'data/{name}' is not a group of parameter datasets")
            out[name] = {key: load_array(group, key, path) for key in group}
        return out


# --- solver state --------------------------------------------------------------------------------
@dataclass
class SolverStateH5:
    iter: int
    current_step: int
    learned_net: str | None = None
    history: list[np.ndarray] = field(default_factory=list)


def write_solverstate(path: PathLike, state: SolverStateH5) -> None:
    with _create(path) as f:
        save_int(f, "iter", state.iter)
        if state.learned_net is not None:
            save_string(f, "learned_net", state.learned_net)
        save_int(f, "current_step", state.current_step)
        history = f.create_group("history")
        for i, values in enumerate(state.history):
            history.create_dataset(str(i), data=_float_array(values))


def read_solverstate(path: PathLike) -> SolverStateH5:
    with _open(path, "r") as f:
        state = SolverStateH5(iter=load_int(f, "iter", path), current_step=load_int(f, "current_step", path))
        if "learned_net" in f:
            state.learned_net = load_string(f, "learned_net", path)
        history = f.get("history")
        if not isinstance(history, h5py.Group):
            raise FormatError(path, "Error reading history: no group 'history'")
        names = sorted(history, key=lambda n: (not n.isdigit(), int(n) if n.isdigit() else 0, n))
        if names != [str(i) for i in range(len(names))]:
            raise FormatError(path, f"history datasets should be named 0..{len(names) - 1}, got {names}")
        state.history = [load_array(history, name, path) for name in names]
        return state
