"""Write Datum records into a new LMDB, as Caffe's converters do (keys ``%08d``, a commit every 1000)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from proto import caffe_pb2

COMMIT_EVERY = 1000


def write_datum_lmdb(
    path: Path, images: np.ndarray, labels: np.ndarray, progress: Callable[[int], None] | None = None
) -> None:
    """Records ``0 .. N-1`` of uint8 ``images`` (N, C, H, W) with int ``labels``; ``progress(done)``
    after every commit."""
    if images.dtype != np.uint8 or images.ndim != 4 or len(images) != len(labels):
        raise ValueError(
            f"expected uint8 images (N, C, H, W) and N labels, got {images.shape} {images.dtype}"
        )
    import lmdb  # only writing a database loads it

    n, c, h, w = images.shape
    datum = caffe_pb2.Datum(channels=c, height=h, width=w)
    # Leaf pages hold whole records: room for each record plus its page share, doubled for the tree.
    env = lmdb.open(
        os.fspath(path), map_size=max(1 << 24, 2 * n * (c * h * w + 96)), subdir=True, meminit=False
    )
    try:
        for begin in range(0, n, COMMIT_EVERY):
            with env.begin(write=True) as txn:
                for i in range(begin, min(begin + COMMIT_EVERY, n)):
                    datum.data = images[i].tobytes()
                    datum.label = int(labels[i])
                    txn.put(b"%08d" % i, datum.SerializeToString(), append=True)
            if progress is not None:
                progress(min(begin + COMMIT_EVERY, n))
    finally:
        env.close()
