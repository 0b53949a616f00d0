"""Helpers for testing layers: build one from prototxt text, and Caffe's gradient checker.

The checker follows Caffe's GradientChecker with its default objective: E = 1/2 sum(top^2) over
every top, so each top's diff is its own data. Analytic gradients from one backward pass are
compared with central differences, the error scaled by max(|analytic|, |numeric|, 1). Points
within ``kink_range`` of ``kink`` (ReLU's 0, say) are skipped. Run it in float64.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any, cast

import numpy as np
from google.protobuf import text_format

from engine import backend, rng
from engine.blob import Blob
from engine.layers import Layer, create_layer
from proto import caffe_pb2


def layer_param(text: str, phase: int = caffe_pb2.TRAIN) -> caffe_pb2.LayerParameter:
    param = caffe_pb2.LayerParameter()
    text_format.Parse(text, param)
    if not param.HasField("phase"):
        param.phase = cast(caffe_pb2.Phase, phase)
    return param


def make_layer(
    text: str, xp: ModuleType = np, dtype: Any = np.float64, phase: int = caffe_pb2.TRAIN
) -> Layer:
    return create_layer(layer_param(text, phase), xp=xp, dtype=dtype)


def random_blob(
    shape: Sequence[int],
    xp: ModuleType = np,
    dtype: Any = np.float64,
    low: float = -1.0,
    high: float = 1.0,
    seed: int = 1701,
) -> Blob:
    blob = Blob(tuple(shape), dtype, xp)
    values = np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)
    blob.data[...] = xp.asarray(values)
    return blob


def blobs(n: int, xp: ModuleType = np, dtype: Any = np.float64) -> list[Blob]:
    return [Blob((), dtype, xp) for _ in range(n)]


def host(array: Any) -> np.ndarray:
    return backend.to_host(array)


class GradientChecker:
    def __init__(
        self,
        stepsize: float = 1e-2,
        threshold: float = 1e-3,
        seed: int = 1701,
        kink: float = 0.0,
        kink_range: float = -1.0,
    ) -> None:
        self.stepsize = stepsize
        self.threshold = threshold
        self.seed = seed
        self.kink = kink
        self.kink_range = kink_range

    def _objective(self, layer: Layer, bottom: list[Blob], top: list[Blob]) -> float:
        rng.set_random_seed(self.seed)  # stochastic layers draw the same noise every pass
        layer.reshape(bottom, top)
        layer.forward(bottom, top)
        loss = 0.0
        for blob in top:
            loss += 0.5 * float((blob.data.astype(np.float64) ** 2).sum())
        return loss

    def check(
        self,
        layer: Layer,
        bottom: list[Blob],
        top: list[Blob],
        check_bottom: Sequence[int] | None = None,
        check_params: bool = True,
    ) -> None:
        """Raise AssertionError at the first element whose gradients disagree."""
        layer.setup(bottom, top)
        wanted = range(len(bottom)) if check_bottom is None else check_bottom
        propagate_down = [i in wanted for i in range(len(bottom))]
        checked: list[tuple[str, Blob]] = []
        if check_params:
            checked += [(f"param {i}", b) for i, b in enumerate(layer.blobs)]
        checked += [(f"bottom {i}", bottom[i]) for i in wanted]

        for _, blob in checked:
            blob.diff[...] = 0
        self._objective(layer, bottom, top)
        for blob in top:
            blob.diff[...] = blob.data
        layer.backward(top, propagate_down, bottom)
        analytic = [host(blob.diff).astype(np.float64).ravel() for _, blob in checked]

        for (what, blob), computed in zip(checked, analytic):
            values = blob.data.reshape(-1)
            for i in range(values.size):
                feature = float(values[i])
                if self.kink_range > 0 and abs(feature - self.kink) <= self.kink_range:
                    continue
                values[i] = feature + self.stepsize
                positive = self._objective(layer, bottom, top)
                values[i] = feature - self.stepsize
                negative = self._objective(layer, bottom, top)
                values[i] = feature
                estimated = (positive - negative) / (2 * self.stepsize)
                scale = max(abs(computed[i]), abs(estimated), 1.0)
                assert abs(computed[i] - estimated) <= self.threshold * scale, (
                    f"{layer.type} '{layer.name}': gradient of {what} element {i}: "
                    f"analytic {computed[i]:.6g} vs numeric {estimated:.6g}"
                )
        self._objective(layer, bottom, top)  # leave the tops as the unperturbed forward made them
