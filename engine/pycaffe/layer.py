"""pycaffe's Layer: the base class of Python layers (``type: "Python"``).

A script subclasses it and names the subclass in a layer's ``python_param``; the engine's Python
layer (engine/layers/python_layer.py) makes the object and drives it. Made by hand
(``MyLayer(param)``), the object keeps its learnable blobs itself.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from engine.blob import Blob as EngineBlob
from engine.pycaffe.blob import Blob, BlobVec, ParamOwner
from engine.pycaffe.host_copies import HostCopies
from proto import caffe_pb2


class EngineSide(ParamOwner, Protocol):
    """The engine layer a pycaffe Layer is bound to: its blobs and which of them want gradients."""

    param_propagate_down: list[bool]


class Layer:
    """pycaffe's Layer, and the base class of Python layers.

    Subclass it and name the subclass in a ``type: "Python"`` layer's ``python_param``::

        class TimesTen(caffe.Layer):
            def setup(self, bottom, top): ...          # read self.param_str; self.blobs.add_blob(...)
            def reshape(self, bottom, top): top[0].reshape(*bottom[0].data.shape)
            def forward(self, bottom, top): top[0].data[...] = 10 * bottom[0].data
            def backward(self, top, propagate_down, bottom): bottom[0].diff[...] = 10 * top[0].diff

    The net makes the object with the LayerParameter; before ``setup`` it sets ``self.param_str``
    (python_param.param_str) and ``self.phase`` (TRAIN or TEST). ``self.blobs`` holds its
    learnable parameters; ``type`` reads "Python".
    """

    _engine_side: EngineSide
    _blobvec: BlobVec
    phase: int
    param_str: str

    def __init__(self, param: caffe_pb2.LayerParameter | None = None) -> None:
        if "_engine_side" in self.__dict__:  # made by a net's Python layer, already bound to it
            return
        layer_param = caffe_pb2.LayerParameter(type="Python")  # made by hand: storage of its own
        if param is not None:
            layer_param.CopyFrom(param)
        self.bind(_OwnBlobs(layer_param), HostCopies())
        self.param_str = layer_param.python_param.param_str
        self.phase = int(layer_param.phase)

    def bind(self, engine_side: EngineSide, copies: HostCopies) -> None:
        """Hold ``engine_side``'s learnable blobs as ``self.blobs`` (the engine calls it; not pycaffe's)."""
        self._engine_side = engine_side
        self._blobvec = BlobVec(engine_side, copies)

    @property
    def type(self) -> str:
        return "Python"

    @property
    def blobs(self) -> BlobVec:
        return self._blobvec

    @property
    def param_propagate_down(self) -> list[bool]:
        """Whether each blob of ``blobs`` wants a gradient (its lr_mult is not 0); set by the net."""
        return list(self._engine_side.param_propagate_down)

    def setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Read ``self.param_str``, check the bottoms, create ``self.blobs``; by default nothing."""

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define reshape(bottom, top) to shape its tops")

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define forward(bottom, top)")

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        """By default no gradient: an error only if one is wanted."""
        if any(propagate_down):
            raise NotImplementedError(
                f"{type(self).__name__} must define backward(top, propagate_down, bottom) to backpropagate"
            )


class _OwnBlobs:
    """A hand-made layer's blobs: those stored in its LayerParameter, then what setup adds (CPU)."""

    def __init__(self, param: caffe_pb2.LayerParameter) -> None:
        self.blobs: list[EngineBlob] = []
        self.param_propagate_down: list[bool] = []
        for index, proto in enumerate(param.blobs):
            blob = self.new_blob(())
            try:
                blob.from_proto(proto)
            except ValueError as exc:
                raise ValueError(f"layer '{param.name}': blobs[{index}] of its parameter: {exc}") from None
            self.blobs.append(blob)

    def new_blob(self, shape: tuple[int, ...]) -> EngineBlob:
        return EngineBlob(shape, np.float32, np)
