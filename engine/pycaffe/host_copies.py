"""Host copies of device blobs, for Python code that reads and writes numpy arrays.

On the CPU backend a blob's arrays are numpy arrays already and are handed out as they are. On
the GPU they are device arrays: Python code gets a host copy, made on first touch and kept, as
Caffe's SyncedMemory keeps its host side. ``push`` copies what the code may have written to the
device before the engine runs; ``pull`` refreshes every copy in place afterwards, so an array a
script keeps across calls stays valid. ``synced()`` is the two around one run of the engine.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from engine import backend
from engine.blob import Blob


class HostCopies:
    """The host arrays handed out for some blobs (none on the CPU backend).

    ``children`` are synced with these (a net's copies and its Python layers' parameter copies).
    """

    def __init__(self, children: Sequence[HostCopies] = ()) -> None:
        self._arrays: dict[tuple[int, str], tuple[Blob, Any]] = {}
        self.children = list(children)

    def host(self, blob: Blob, field: str) -> np.ndarray:
        """``blob.data`` or ``blob.diff`` (``field``) as a numpy array."""
        device = getattr(blob, field)
        if not backend.is_gpu_array(device):
            return device
        key = (id(blob), field)
        entry = self._arrays.get(key)
        if entry is None or entry[1].shape != device.shape:
            entry = (blob, backend.to_host(device).copy())
            self._arrays[key] = entry
        return entry[1]

    def push(self) -> None:
        """Copy what Python code may have written into the device arrays."""
        for (_, field), (blob, host) in self._arrays.items():
            device = getattr(blob, field)
            if device.shape == host.shape:
                device.set(host) if hasattr(device, "set") else device.__setitem__(Ellipsis, host)
        for child in self.children:
            child.push()

    def pull(self) -> None:
        """Refresh every handed-out host array in place from the device."""
        for (_, field), (blob, host) in list(self._arrays.items()):
            device = getattr(blob, field)
            if device.shape == host.shape:
                host[...] = backend.to_host(device)
            else:
                del self._arrays[(id(blob), field)]
        for child in self.children:
            child.pull()

    @contextlib.contextmanager
    def synced(self) -> Iterator[None]:
        """Push before the engine runs, pull after it (also when it raises)."""
        self.push()
        try:
            yield
        finally:
            self.pull()

    def clear(self) -> None:
        """Forget every host copy (the blobs moved to another array module)."""
        self._arrays.clear()
