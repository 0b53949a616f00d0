"""MemoryData: batches served from arrays the caller hands over with ``reset(data, labels)``, as
Caffe's MemoryDataLayer (what pycaffe's ``net.set_input_arrays`` feeds).

Tops: data (batch_size, channels, height, width) and label, (batch_size,) after setup and
(batch_size, 1, 1, 1) after a forward, as in Caffe. ``reset`` takes float32 C-contiguous arrays
whose first dimension is a multiple of batch_size and keeps references to them, not copies:
each forward copies the next batch_size rows (the values as they are then), cycling to the first
row at the end. The arrays are not transformed (Caffe only warns about a transform_param). No
gradient.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import numpy as np

from engine.blob import Blob
from engine.layers import facts
from engine.layers.base import Layer
from engine.layers.registry import register_layer

log = logging.getLogger("engine.data")


@register_layer("MemoryData")
class MemoryDataLayer(Layer):
    exact_num_bottom = 0
    exact_num_top = 2
    family = "data"
    params = ("memory_data_param", "transform_param")
    top_names = ("data", "label")
    template = "memory_data_param { batch_size: 64 channels: 1 height: 28 width: 28 }"

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        return facts.positive("batch_size", param.memory_data_param.batch_size)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.memory_data_param
        self.batch_size = p.batch_size
        self.item_shape = (p.channels, p.height, p.width)
        if self.batch_size * p.channels * p.height * p.width <= 0:
            raise self.error(
                "batch_size, channels, height, and width must be specified and positive in memory_data_param"
            )
        top[0].reshape((self.batch_size, *self.item_shape))
        top[1].reshape((self.batch_size,))
        self.data: np.ndarray | None = None
        self.labels: np.ndarray | None = None
        self.n = 0
        self.pos = 0

    @property
    def channels(self) -> int:
        return self.item_shape[0]

    @property
    def height(self) -> int:
        return self.item_shape[1]

    @property
    def width(self) -> int:
        return self.item_shape[2]

    def reset(self, data: Any, labels: Any) -> None:
        """Serve ``data`` (N, C, H, W) and ``labels`` (N values) from the first row on."""
        _check_array(self, data, "data array", self.item_shape)
        _check_array(self, labels, "labels array", None)
        n = data.shape[0]
        if labels.shape[0] != n or labels.size != n:
            raise self.error(
                f"data and labels must have the same first dimension: {data.shape} vs {labels.shape}"
            )
        if n == 0 or n % self.batch_size:
            raise self.error(
                f"first dimensions of input arrays must be a multiple of batch size {self.batch_size}"
            )
        if self.param.HasField("transform_param"):
            log.warning("layer '%s': MemoryData does not transform array data on reset()", self.name)
        self.data, self.labels, self.n, self.pos = data, labels, n, 0

    def set_batch_size(self, batch_size: int) -> None:
        if batch_size <= 0:
            raise self.error("batch_size must be positive")
        self.batch_size = int(batch_size)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing: forward shapes the tops."""

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        if self.data is None or self.labels is None:
            raise self.error("MemoryDataLayer needs to be initialized by calling reset")
        if self.pos + self.batch_size > self.n:
            raise self.error(f"{self.n} rows are not a multiple of batch_size {self.batch_size}")
        rows = slice(self.pos, self.pos + self.batch_size)
        top[0].reshape((self.batch_size, *self.item_shape))
        top[1].reshape((self.batch_size, 1, 1, 1))
        top[0].data[...] = self.xp.asarray(self.data[rows])
        top[1].data[...] = self.xp.asarray(self.labels.reshape(self.n)[rows].reshape(top[1].shape))
        self.pos = (self.pos + self.batch_size) % self.n


def _check_array(layer: Layer, array: Any, what: str, item_shape: tuple[int, ...] | None) -> None:
    """pycaffe's checks: a float32, C-contiguous numpy array (of N x item_shape when given)."""
    if not isinstance(array, np.ndarray):
        raise layer.error(f"{what} must be a numpy ndarray, got {type(array).__name__}")
    if not array.flags.c_contiguous:
        raise layer.error(f"{what} must be C contiguous")
    if array.dtype != np.float32:
        raise layer.error(f"{what} must be float32, got {array.dtype}")
    if item_shape is not None and (array.ndim != 4 or array.shape[1:] != item_shape):
        raise layer.error(f"{what} must be N x {' x '.join(map(str, item_shape))}, got {array.shape}")
