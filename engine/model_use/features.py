"""Caffe's extract_features: named blobs of a TEST-phase net, batch after batch, as Datums of
float features. Qt-free.

Each item of a blob becomes one Datum whose ``float_data`` holds its values and whose channels,
height and width are the blob's legacy C, H, W (1 for axes it lacks), keyed by its index written
as ten digits (``0000000000``, ...), committed every 1000 records, as tools/extract_features.cpp
writes them into a new LMDB. A destination whose name ends in ``.npy`` gets the same values as one
N x ... float32 array instead (a convenience; Caffe has no such output).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from engine import backend
from engine.data.errors import DataError
from engine.net import Net
from proto import caffe_pb2
from proto.atomic import write_bytes_atomic

COMMIT_EVERY = 1000


def key(index: int) -> bytes:
    """Caffe's ``format_int(index, 10)``."""
    return b"%010d" % index


def legacy_chw(shape: Sequence[int]) -> tuple[int, int, int]:
    """Blob::channels(), height(), width(): axes 1..3, 1 for those a blob lacks."""
    dims = [int(d) for d in shape[1:4]]
    return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]


class LMDBFeatures:
    """A new LMDB of float Datums (refused when ``path`` exists, as Caffe's db::NEW fails)."""

    def __init__(self, path: str, count: int, item_size: int) -> None:
        import lmdb

        if os.path.exists(path):
            raise DataError(f"{path}: already exists (extract_features writes a new database)")
        self.path = path
        map_size = max(1 << 24, 2 * count * (4 * item_size + 96))
        self.env = lmdb.open(path, map_size=map_size, subdir=True, meminit=False)
        self.txn = self.env.begin(write=True)
        self.index = 0

    def add(self, items: np.ndarray) -> None:
        datum = caffe_pb2.Datum()
        datum.channels, datum.height, datum.width = legacy_chw(items.shape)
        for item in items:
            del datum.float_data[:]
            datum.float_data.extend(item.ravel().tolist())
            self.txn.put(key(self.index), datum.SerializeToString())
            self.index += 1
            if self.index % COMMIT_EVERY == 0:
                self.txn.commit()
                self.txn = self.env.begin(write=True)

    def close(self) -> None:
        self.txn.commit()
        self.env.close()


class NpyFeatures:
    """All items as one float32 array, written (atomically) on close."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.parts: list[np.ndarray] = []
        self.index = 0

    def add(self, items: np.ndarray) -> None:
        self.parts.append(np.array(items, np.float32))
        self.index += len(items)

    def close(self) -> None:
        buffer = io.BytesIO()
        np.save(buffer, np.concatenate(self.parts) if self.parts else np.zeros((0,), np.float32))
        write_bytes_atomic(self.path, buffer.getvalue())


def open_sink(path: str, count: int, item_size: int) -> LMDBFeatures | NpyFeatures:
    if path.lower().endswith(".npy"):
        return NpyFeatures(path)
    if not Path(path).parent.resolve().is_dir():
        raise DataError(f"{path}: its folder does not exist")
    return LMDBFeatures(path, count, item_size)


def extract(
    net: Net,
    blob_names: Sequence[str],
    destinations: Sequence[str],
    batches: int,
    say: Callable[[str], None] = lambda _: None,
) -> list[int]:
    """Run ``batches`` forward passes, writing each named blob's items to its destination; the
    number of items written to each."""
    if len(blob_names) != len(destinations):
        raise DataError(" the number of blob names and dataset names must be equal")
    for name in blob_names:
        if not net.has_blob(name):
            raise DataError(f"Unknown feature blob name {name} in the network")
    sinks = []
    try:
        for name, path in zip(blob_names, destinations):
            blob = net.blob_by_name(name)
            shape = tuple(blob.shape)
            say(f"Opening dataset {path}")
            sinks.append(open_sink(path, batches * shape[0], int(np.prod(shape[1:]))))
        say("Extacting Features")  # sic: Caffe's own spelling, for log parsers
        for _ in range(batches):
            net.forward_from_to()
            for name, sink in zip(blob_names, sinks):
                values = backend.to_host(net.blob_by_name(name).data)
                before = sink.index
                sink.add(values.reshape(values.shape[0], *values.shape[1:]))
                if before // COMMIT_EVERY != sink.index // COMMIT_EVERY:
                    say(f"Extracted features of {sink.index} query images for feature blob {name}")
    finally:
        for sink in sinks:
            sink.close()
    for name, sink in zip(blob_names, sinks):
        say(f"Extracted features of {sink.index} query images for feature blob {name}")
    say("Successfully extracted the features!")
    return [sink.index for sink in sinks]
