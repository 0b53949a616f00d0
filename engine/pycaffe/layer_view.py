"""A built-in layer in a pycaffe Net's ``net.layers``: type, phase and blobs; calls run the engine's."""

from __future__ import annotations

from collections.abc import Callable

from engine.layers import Layer as EngineLayer
from engine.pycaffe.blob import Blob, engine_blobs
from engine.pycaffe.host_copies import HostCopies
from engine.pycaffe.layer import Layer


class LayerView(Layer):
    """A built-in layer as pycaffe's ``net.layers`` shows it; setup/reshape/forward/backward run its code."""

    def __init__(self, layer: EngineLayer, copies: HostCopies) -> None:
        self.bind(layer, copies)
        self._layer = layer
        self._copies = copies
        self.phase = int(layer.phase)

    @property
    def type(self) -> str:
        return self._layer.type

    def _run(self, action: Callable[[], None]) -> None:
        with self._copies.synced():
            action()

    def setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self._run(lambda: self._layer.layer_setup(engine_blobs(bottom), engine_blobs(top)))

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        self._run(lambda: self._layer.reshape(engine_blobs(bottom), engine_blobs(top)))

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self._run(lambda: self._layer.forward(engine_blobs(bottom), engine_blobs(top)))

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        self._run(lambda: self._layer.backward(engine_blobs(top), list(propagate_down), engine_blobs(bottom)))

    def __repr__(self) -> str:
        return f"<Layer {self._layer.name} ({self.type})>"
