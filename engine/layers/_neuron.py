"""Helpers for neuron layers: a two-valued slope array, and a base that keeps the input for backward."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.blob import Blob
from engine.layers.base import NeuronLayer


def step(mask: Any, otherwise: Any, dtype: np.dtype) -> Any:
    """An array of 1 where ``mask`` holds and ``otherwise`` (a scalar or an array that broadcasts
    against the mask) elsewhere: a slope for piecewise-linear gradients. Arithmetic on the 0/1 mask
    gives exact values and runs several times faster than ``xp.where`` on unpredictable masks."""
    out = (~mask).astype(dtype)
    out *= otherwise
    out += mask
    return out


class InputKeepingNeuronLayer(NeuronLayer):
    """Run in place, the top overwrites the input that backward needs, so forward keeps a copy
    first (Caffe does this for PReLU only; here every such layer may run in place)."""

    _kept_input: Any = None

    def keep_input(self, bottom: list[Blob], top: list[Blob]) -> None:
        self._kept_input = bottom[0].data.copy() if top[0] is bottom[0] else None

    def input_data(self, bottom: list[Blob], top: list[Blob]) -> Any:
        """The input of the last forward: the kept copy when in place, else the bottom itself."""
        if top[0] is bottom[0]:
            if self._kept_input is None:
                raise self.error("backward ran in place before any forward")
            return self._kept_input
        return bottom[0].data
