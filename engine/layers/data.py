"""Data: batches of Caffe ``Datum`` records from an LMDB, as Caffe's DataLayer.

Tops: data (N, C, H, W) after the transform_param; label (N,) when a second top is given.
Records are read in key order and the reading cycles to the first record at the end. The shape
is taken from the first record at setup and from the first record of every batch after that.
``rand_skip`` is ignored, as Caffe 1.0's DataLayer ignores it (reading starts at the first key;
ImageData still honours it). The deprecated
``scale``/``mean_file``/``crop_size``/``mirror`` of data_param are ignored with a warning, as
Caffe ignores them outside V1 nets (whose upgrade moves them into transform_param). No gradient.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from engine.blob import Blob
from engine.data.datum import datum_to_array, parse_datum
from engine.data.lmdb_source import LMDBSource, open_database
from engine.data.transformer import DataTransformer
from engine.layers import facts
from engine.layers._base_data import BasePrefetchingDataLayer, BatchMaker, batch_rng, log
from engine.layers.registry import register_layer


@register_layer("Data")
class DataLayer(BasePrefetchingDataLayer):
    family = "data"
    params = ("data_param", "transform_param")
    top_names = ("data", "label")
    template = "data_param { batch_size: 64 backend: LMDB }"

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        return facts.positive("batch_size", param.data_param.batch_size)

    def data_layer_setup(self, top: list[Blob]) -> BatchMaker:
        p = self.param.data_param
        if p.batch_size <= 0:
            raise self.error("data_param.batch_size must be positive")
        for field in ("scale", "mean_file", "crop_size", "mirror"):
            if p.HasField(field):
                log.warning(
                    "layer '%s': data_param.%s is deprecated and ignored; use transform_param",
                    self.name,
                    field,
                )
        self.prefetch_depth = p.prefetch
        source = open_database(p.source, p.backend, self.data_paths.resolve(p.source))
        if p.rand_skip:
            log.info("layer '%s': data_param.rand_skip is ignored by Data layers, as in Caffe 1.0", self.name)
        batches = DatumBatches(source, self.transformer, p.batch_size, 0, self.seed, self.output_labels)
        first = batches.arrays(0, 1)[0][0]
        top[0].reshape((p.batch_size, *self.transformer.output_shape(first.shape)))
        if self.output_labels:
            top[1].reshape((p.batch_size,))
        return batches


class DatumBatches:
    """Batch ``i`` of a Data layer: records ``skip + i * batch_size`` on, transformed."""

    def __init__(
        self,
        source: LMDBSource,
        transformer: DataTransformer,
        batch_size: int,
        skip: int,
        seed: int,
        labels: bool,
    ) -> None:
        self.source = source
        self.transformer = transformer
        self.batch_size = batch_size
        self.skip = skip
        self.seed = seed
        self.labels = labels

    def arrays(self, start: int, count: int) -> tuple[list[np.ndarray], np.ndarray]:
        images, labels = [], np.empty(count, np.int64)
        for k, (key, value) in enumerate(self.source.read(start, count)):
            where = f"{self.source.path} record {key.decode('utf-8', 'replace')!r}"
            datum = parse_datum(value, where)
            images.append(datum_to_array(datum, where, self.transformer.decode_mode))
            labels[k] = datum.label
        return images, labels

    def close(self) -> None:
        self.source.close()

    def __call__(self, index: int) -> tuple[np.ndarray, ...]:
        images, labels = self.arrays(self.skip + index * self.batch_size, self.batch_size)
        data = self.transformer(images, batch_rng(self.transformer, self.seed, index))
        return (data, labels.astype(data.dtype)) if self.labels else (data,)
