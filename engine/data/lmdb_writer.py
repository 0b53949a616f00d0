"""Write Datum records into a new LMDB, as Caffe's converters do (a commit every 1000 records).

``LMDBWriter`` takes (key, value) records in key order and commits them in batches; the map starts
small and doubles whenever a batch does not fit, as Caffe 1.0's LMDB transaction does, so a
database of any size is written without guessing its size first.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from proto import caffe_pb2

COMMIT_EVERY = 1000


class LMDBWriter:
    """A new LMDB at ``path`` (a folder holding data.mdb and lock.mdb, as Caffe makes it); with
    ``new`` the folder must not exist yet (Caffe's ``mkdir`` fails on one that does)."""

    def __init__(self, path: Path, map_size: int = 1 << 24, new: bool = True) -> None:
        import lmdb  # only writing a database loads it

        if new or not os.path.isdir(path):
            os.mkdir(path)
        self._lmdb = lmdb
        self._env = lmdb.open(os.fsencode(path), map_size=map_size, subdir=True, meminit=False)
        self._batch: list[tuple[bytes, bytes]] = []
        self.count = 0

    def put(self, key: bytes, value: bytes) -> None:
        self._batch.append((key, value))
        if len(self._batch) >= COMMIT_EVERY:
            self.commit()

    def commit(self) -> None:
        """Write the records put since the last commit, growing the map until they fit."""
        while self._batch:
            try:
                with self._env.begin(write=True) as txn:
                    for key, value in self._batch:
                        txn.put(key, value)
            except self._lmdb.MapFullError:
                self._env.set_mapsize(2 * self._env.info()["map_size"])
                continue
            self.count += len(self._batch)
            self._batch = []

    def close(self) -> None:
        """Commit what is left and close the database."""
        try:
            self.commit()
        finally:
            self._env.close()

    def __enter__(self) -> LMDBWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            self._batch = []  # a failed run's records are not worth a commit
        self.close()


def write_datum_lmdb(
    path: Path, images: np.ndarray, labels: np.ndarray, progress: Callable[[int], None] | None = None
) -> None:
    """Records ``0 .. N-1`` (keys ``%08d``) of uint8 ``images`` (N, C, H, W) with int ``labels``;
    ``progress(done)`` after every commit."""
    if images.dtype != np.uint8 or images.ndim != 4 or len(images) != len(labels):
        raise ValueError(
            f"expected uint8 images (N, C, H, W) and N labels, got {images.shape} {images.dtype}"
        )
    n, c, h, w = images.shape
    datum = caffe_pb2.Datum(channels=c, height=h, width=w)
    # Leaf pages hold whole records: room for each record plus its page share, doubled for the tree.
    with LMDBWriter(path, max(1 << 24, 2 * n * (c * h * w + 96)), new=False) as db:
        for i in range(n):
            datum.data = images[i].tobytes()
            datum.label = int(labels[i])
            db.put(b"%08d" % i, datum.SerializeToString())
            if progress is not None and (i + 1 == n or (i + 1) % COMMIT_EVERY == 0):
                db.commit()
                progress(i + 1)
