"""What a layer mapping sees: its Caffe layer, the values of its bottoms, the names its tops must get,
the shapes the engine inferred, and the graph to add nodes to. Mappings register by layer type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.export import ExportError
from engine.export.onnx_graph import Graph
from engine.layers.base import Layer
from proto import caffe_pb2


@dataclass
class LayerContext:
    g: Graph
    layer: Layer
    bottoms: list[str]  # the ONNX values holding the bottoms
    tops: list[str]  # the names the tops' values must be given
    bottom_shapes: list[tuple[int, ...]]
    top_shapes: list[tuple[int, ...]]
    params: list[str]  # the layer's blobs as initializers (shared blobs share one)
    param_arrays: list[np.ndarray]

    @property
    def p(self) -> caffe_pb2.LayerParameter:
        return self.layer.param

    @property
    def x(self) -> str:
        return self.bottoms[0]

    @property
    def y(self) -> str:
        return self.tops[0]

    @property
    def train(self) -> bool:
        return self.layer.phase == caffe_pb2.TRAIN

    def refuse(self, why: str) -> ExportError:
        return ExportError(f"layer '{self.p.name}' ({self.p.type}): {why}")

    def no_free_batch(self, why: str) -> None:
        if self.g.dynamic_batch:
            raise self.refuse(f"{why}; export without --dynamic-batch")

    def broadcast(self, name: str, shape: tuple[int, ...], axis: int, ndim: int) -> str:
        """``name`` (of ``shape``) laid on axes ``axis ..`` of a rank-``ndim`` value, numpy-broadcastable."""
        trailing = ndim - axis - len(shape)
        if trailing <= 0:
            return name
        spec = [*shape, *([1] * trailing)]
        if self.g.dynamic_batch and shape:
            spec[0] = 0  # copy the (maybe free) first axis
        return self.g.op("Reshape", name, self.g.ints(spec))


Mapping = Callable[[LayerContext], Any]
MAPPINGS: dict[str, Mapping] = {}


def maps(*types: str) -> Callable[[Mapping], Mapping]:
    """Register a mapping under Caffe's type strings, as engine layers register."""

    def register(fn: Mapping) -> Mapping:
        for name in types:
            MAPPINGS[name] = fn
        return fn

    return register
