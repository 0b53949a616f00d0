"""HDF5Output: writes its two bottoms to ``hdf5_output_param.file_name`` as the datasets ``data``
(bottom 0) and ``label`` (bottom 1), as Caffe's HDF5OutputLayer. No tops, no gradient.

Caffe creates (empties) the file at setup; here setup only checks that its folder exists and the
first forward creates it, so that merely building the net (the editor does so to infer shapes)
never empties an existing file. Each forward writes the batch in the net's
float type, with Caffe's 4-D legacy shapes: (N, C, H, W), a missing axis counted as 1, so an
(N, D) bottom is stored as (N, D, 1, 1). Caffe 1.0 can write only one batch (a second forward
fails on the existing datasets); here later batches are appended as more rows, so a test run of
several batches leaves all of them in the file, readable by an HDF5Data layer.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from engine import backend
from engine.blob import Blob
from engine.layers.base import Layer
from engine.layers.registry import register_layer
from proto.errors import FormatError

if TYPE_CHECKING:
    import h5py

DATASETS = ("data", "label")


@register_layer("HDF5Output")
class HDF5OutputLayer(Layer):
    exact_num_bottom = 2
    exact_num_top = 0
    family = "loss"
    params = ("hdf5_output_param",)
    template = 'hdf5_output_param { file_name: "output.h5" }'

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.file_name = self.param.hdf5_output_param.file_name
        if not self.file_name:
            raise self.error("hdf5_output_param.file_name is required")
        folder = os.path.dirname(os.path.abspath(self.file_name))
        if not os.path.isdir(folder):
            raise self.error(f"Failed to open HDF5 file {self.file_name}: the folder {folder} does not exist")
        self.rows_written = 0

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing: the bottoms are written as they come."""

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        arrays = [self._legacy_4d(blob, k) for k, blob in enumerate(bottom)]
        if arrays[0].shape[0] != arrays[1].shape[0]:
            raise self.error(
                f"data blob and label blob must have the same batch size: {arrays[0].shape[0]} vs "
                f"{arrays[1].shape[0]}"
            )
        from proto import hdf5io  # only a net that writes HDF5 loads h5py

        try:  # a link at file_name is refused; a full disk is one line (proto.hdf5io.appending)
            with hdf5io.appending(self.file_name, fresh=not self.rows_written) as f:
                for name, array in zip(DATASETS, arrays):
                    self._append(f, name, array)
        except (OSError, ValueError, FormatError) as exc:
            reason = exc.message if isinstance(exc, FormatError) else str(exc)
            raise self.error(f"Failed to write HDF5 file {os.fspath(self.file_name)}: {reason}") from exc
        self.rows_written += arrays[0].shape[0]

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        """Nothing flows back (Caffe's backward is empty)."""

    def _legacy_4d(self, blob: Blob, index: int) -> np.ndarray:
        if blob.num_axes > 4:
            raise self.error(f"bottom {index} has {blob.num_axes} axes; HDF5Output writes at most 4")
        shape = tuple(blob.shape) + (1,) * (4 - blob.num_axes)
        return backend.to_host(blob.data).reshape(shape).astype(self.dtype, copy=False)

    def _append(self, f: h5py.File, name: str, array: np.ndarray) -> None:
        dataset = f.get(name)
        if dataset is None:
            f.create_dataset(name, data=array, maxshape=(None, *array.shape[1:]), chunks=True)
            return
        if dataset.shape[1:] != array.shape[1:]:
            raise self.error(
                f"bottom '{name}' changed shape from {dataset.shape[1:]} to {array.shape[1:]} per row"
            )
        start = dataset.shape[0]
        dataset.resize(start + array.shape[0], axis=0)
        dataset[start:] = array
