"""HDF5Data: rows of the datasets named by the tops, from the ``.h5`` files a list file names,
as Caffe's HDF5DataLayer.

Tops: one per dataset, (N, *row shape) with N = batch_size; any numeric type is read as the
net's float type. Rows are served file after file in the list's order, cycling at the end; with
``shuffle`` the file order is redrawn every pass and each file's rows every time it is read
(rows of different files are never mixed). There is no transformation: a transform_param is an
error, as in Caffe. No gradient.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from engine.blob import Blob
from engine.data.hdf5_source import HDF5Files, read_file_list
from engine.layers import facts
from engine.layers._base_data import BasePrefetchingDataLayer, BatchMaker, log
from engine.layers.registry import register_layer


@register_layer("HDF5Data")
class HDF5DataLayer(BasePrefetchingDataLayer):
    max_top = -1
    family = "data"
    params = ("hdf5_data_param",)
    top_names = ("data", "label")
    template = "hdf5_data_param { batch_size: 64 }"

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        return facts.positive("batch_size", param.hdf5_data_param.batch_size)

    def data_layer_setup(self, top: list[Blob]) -> BatchMaker:
        if self.param.HasField("transform_param"):
            raise self.error("HDF5Data does not transform data.")
        p = self.param.hdf5_data_param
        if p.batch_size <= 0:
            raise self.error("hdf5_data_param.batch_size must be positive")
        if len(self.param.top) != len(top):
            raise self.error("every top must be named: the names select the HDF5 datasets")
        files = read_file_list(self.data_paths.resolve(p.source), self.data_paths)
        log.info("Number of HDF5 files: %d", len(files))
        source = HDF5Files(files, list(self.param.top), p.shuffle, self.seed, self.dtype)
        for blob, row_shape in zip(top, source.row_shapes):
            blob.reshape((p.batch_size, *row_shape))
        return HDF5Batches(source, p.batch_size)


class HDF5Batches:
    """Batch ``i`` of an HDF5Data layer: rows ``i * batch_size`` on of the file stream."""

    def __init__(self, source: HDF5Files, batch_size: int) -> None:
        self.source = source
        self.batch_size = batch_size

    def __call__(self, index: int) -> tuple[np.ndarray, ...]:
        return tuple(self.source.read(index * self.batch_size, self.batch_size))
