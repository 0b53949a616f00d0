"""PReLU: a ReLU whose negative slope is learned, one per channel or one for all."""

from __future__ import annotations

from typing import Any

from engine.blob import Blob
from engine.fillers import get_filler
from engine.layers import facts
from engine.layers._neuron import InputKeepingNeuronLayer, step
from engine.layers.registry import register_layer
from proto import caffe_pb2


@register_layer("PReLU")
class PReLULayer(InputKeepingNeuronLayer):
    """y = max(x, 0) + a_c * min(x, 0) for x of shape (N, C, ...), c the index on axis 1.

    blobs[0]: the slopes a, shape (C,) or () with channel_shared (default filler: constant 0.25).
    dE/dx = dE/dy where x > 0, a_c * dE/dy elsewhere;
    dE/da_c = sum over the other axes of dE/dy * x where x <= 0 (summed over channels too if shared).
    In place allowed: the input is kept for backward, as Caffe does.
    """

    params = ("prelu_param",)

    @classmethod
    def learnable_blobs(cls, param: Any) -> list[facts.ParamBlob]:
        return [facts.ParamBlob("slopes", "prelu_param.filler", facts.constant(0.25))]

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self._check_axes(bottom)
        p = self.param.prelu_param
        self.channel_shared = p.channel_shared
        channels = bottom[0].shape[1]
        if not self.blobs:
            blob = self.new_blob(() if self.channel_shared else (channels,))
            filler = (
                p.filler if p.HasField("filler") else caffe_pb2.FillerParameter(type="constant", value=0.25)
            )
            get_filler(filler).fill(blob)
            self.blobs = [blob]
        expected = 1 if self.channel_shared else channels
        if self.blobs[0].count() != expected:
            raise self.error(
                f"negative slope blob has {self.blobs[0].count()} values; channel_shared "
                f"{str(self.channel_shared).lower()} with {channels} channels needs {expected}"
            )

    def _check_axes(self, bottom: list[Blob]) -> None:
        if bottom[0].num_axes < 2:
            raise self.error(f"bottom must have at least 2 axes, got shape {bottom[0].shape}")

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        self._check_axes(bottom)
        if not self.channel_shared and bottom[0].shape[1] != self.blobs[0].count():
            raise self.error(f"bottom has {bottom[0].shape[1]} channels, the slopes {self.blobs[0].count()}")
        top[0].reshape(bottom[0].shape)

    def _slopes(self, bottom: list[Blob]) -> tuple[tuple[int, int, int], Any]:
        """The (N, C, rest) view of the input and the slopes broadcast against it."""
        n, c = bottom[0].shape[:2]
        return (n, c, bottom[0].count(2)), self.blobs[0].data.reshape(1, -1, 1)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.keep_input(bottom, top)
        shape, slope = self._slopes(bottom)
        x = bottom[0].data.reshape(shape)
        negative = self.xp.minimum(x, 0)
        negative *= slope
        negative += self.xp.maximum(x, 0)
        top[0].data[...] = negative.reshape(bottom[0].shape)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        xp = self.xp
        shape, slope = self._slopes(bottom)
        x = self.input_data(bottom, top).reshape(shape)
        dy = top[0].diff.reshape(shape)
        # The slopes first: in place, writing the bottom diff overwrites the top diff.
        if self.param_propagate_down[0]:
            per_channel = (dy * xp.minimum(x, 0)).sum(axis=(0, 2))
            self.blobs[0].diff += per_channel.sum() if self.channel_shared else per_channel
        if propagate_down[0]:
            bottom[0].diff[...] = (dy * step(x > 0, slope, self.dtype)).reshape(bottom[0].shape)
