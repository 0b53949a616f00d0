"""pycaffe's Blob and BlobVec: an engine blob as Python code sees it, numpy arrays on any backend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, overload

import numpy as np

from engine.blob import Blob as EngineBlob
from engine.pycaffe.host_copies import HostCopies


class Blob:
    """pycaffe's Blob: shape, count and the legacy 4-D accessors; data and diff as numpy arrays."""

    def __init__(self, blob: EngineBlob, copies: HostCopies) -> None:
        self._blob = blob
        self._copies = copies

    @property
    def data(self) -> np.ndarray:
        return self._copies.host(self._blob, "data")

    @property
    def diff(self) -> np.ndarray:
        return self._copies.host(self._blob, "diff")

    @property
    def shape(self) -> tuple[int, ...]:
        return self._blob.shape

    @property
    def count(self) -> int:
        return self._blob.count()

    num = property(lambda self: self._blob.num)
    channels = property(lambda self: self._blob.channels)
    height = property(lambda self: self._blob.height)
    width = property(lambda self: self._blob.width)

    def reshape(self, *shape: int) -> None:
        self._blob.reshape(tuple(int(s) for s in shape))

    @property
    def engine_blob(self) -> EngineBlob:
        """The engine's blob underneath (not part of pycaffe)."""
        return self._blob

    def __repr__(self) -> str:
        return f"<Blob {self.shape}>"


def engine_blobs(blobs: Sequence[Blob]) -> list[EngineBlob]:
    return [b.engine_blob for b in blobs]


class ParamOwner(Protocol):
    """What holds a layer's learnable blobs: an engine layer, or a Python layer made by hand."""

    blobs: list[EngineBlob]

    def new_blob(self, shape: tuple[int, ...]) -> EngineBlob: ...


class BlobVec(Sequence[Blob]):
    """A layer's learnable blobs, as pycaffe's BlobVec: indexing, len, iteration and add_blob."""

    def __init__(self, owner: ParamOwner, copies: HostCopies) -> None:
        self._owner = owner  # read `blobs` on each access: a layer may replace its list
        self._copies = copies

    def __len__(self) -> int:
        return len(self._owner.blobs)

    @overload
    def __getitem__(self, index: int) -> Blob: ...

    @overload
    def __getitem__(self, index: slice) -> list[Blob]: ...

    def __getitem__(self, index: int | slice) -> Blob | list[Blob]:
        if isinstance(index, slice):
            return [Blob(b, self._copies) for b in self._owner.blobs[index]]
        return Blob(self._owner.blobs[index], self._copies)

    def add_blob(self, *shape: int) -> None:
        """Append a zero-filled blob of this shape (ints given one by one, as pycaffe takes them)."""
        self._owner.blobs.append(self._owner.new_blob(tuple(int(s) for s in shape)))

    def __repr__(self) -> str:
        return f"<BlobVec of {len(self)}: {', '.join(str(b.shape) for b in self)}>"
