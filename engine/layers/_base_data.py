"""The base of the prefetching data layers (Data, ImageData, HDF5Data), as Caffe's
BasePrefetchingDataLayer: no bottoms; tops ``data`` and, when a second top is given, ``label``.

A subclass's ``data_layer_setup`` opens its source, shapes the tops, and returns a function that
builds batch ``i`` (host arrays, one per top); it runs on the prefetch thread, so it must not
hold the layer (the thread would keep the layer alive). Batch ``i`` depends only on ``i`` and the
seed the layer drew at setup, so the thread can make batches ahead (``data_param.prefetch``, 4 by
default) without the order depending on timing, and ``seek(i)`` makes the next forward produce
batch ``i`` exactly as an uninterrupted run would (for resuming from a snapshot). Each forward
reshapes the tops to the batch and copies it to the layer's array module once. No backward.
``close`` stops and joins the prefetch thread, then closes the source (a batch maker's own
``close``, when it has one): the layer cannot read after it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

import numpy as np

from engine import rng
from engine.blob import Blob
from engine.data.errors import DataError
from engine.data.prefetch import PREFETCH_COUNT, Prefetcher
from engine.data.transformer import DataTransformer
from engine.layers.base import Layer

log = logging.getLogger("engine.data")

BatchMaker = Callable[[int], tuple[np.ndarray, ...]]


class BasePrefetchingDataLayer(Layer):
    exact_num_bottom = 0
    min_top = 1
    max_top = 2
    prefetch_depth = PREFETCH_COUNT

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.output_labels = len(top) > 1
        self.seed = int(rng.host().integers(2**63))
        self.batches_served = 0
        self._prefetcher: Prefetcher | None = None
        with self.data_errors():
            self.transformer = DataTransformer(
                self.param.transform_param, self.phase, self.dtype, self.data_paths
            )
            self.make_batch = self.data_layer_setup(top)
        log.info("output data size: %s", ",".join(str(d) for d in top[0].shape))

    def data_layer_setup(self, top: list[Blob]) -> BatchMaker:
        raise NotImplementedError

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing: each forward shapes the tops to its batch."""

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        if self._prefetcher is None:
            self._prefetcher = Prefetcher(self.make_batch, self.prefetch_depth, self.batches_served)
        with self.data_errors():
            arrays = self._prefetcher.next()
        for blob, array in zip(top, arrays):
            blob.reshape(array.shape)
            blob.data[...] = self.xp.asarray(array)
        self.batches_served += 1

    def seek(self, batch_index: int) -> None:
        """Make the next forward produce batch ``batch_index`` (0: the first batch after setup)."""
        self.stop_prefetch()
        self.batches_served = int(batch_index)

    def stop_prefetch(self) -> None:
        """Stop prefetching and wait for the thread (a later forward starts again where this stopped)."""
        prefetcher, self._prefetcher = getattr(self, "_prefetcher", None), None
        if prefetcher is not None:
            prefetcher.close()

    def close(self) -> None:
        """Stop and join the prefetch thread, then close the source; the layer cannot read after."""
        self.stop_prefetch()
        close = getattr(getattr(self, "make_batch", None), "close", None)
        if callable(close):
            close()

    @contextlib.contextmanager
    def data_errors(self) -> Iterator[None]:
        """Turn a DataError into the layer's own error, naming the layer as well as the file."""
        try:
            yield
        except DataError as exc:
            raise self.error(str(exc)) from exc


def batch_rng(transformer: DataTransformer, seed: int, index: int) -> np.random.Generator | None:
    """The generator for batch ``index``'s random crops and mirrors (None when none are drawn)."""
    return np.random.default_rng([seed, index]) if transformer.needs_random else None
