"""How a deploy net's images are preprocessed: pycaffe Transformer settings, by default the ones
that reproduce its data layer's ``transform_param`` (which engine/model_use/deploy.py keeps on the
Input layer). Qt-free.

Images come in as pycaffe loads them: H x W x K floats in [0, 1], colour in RGB order. Caffe's data
layer saw OpenCV's bytes (0..255, BGR), subtracted the mean and multiplied by ``scale``; so the
defaults are ``raw_scale`` 255, ``channel_swap`` (2, 1, 0) for colour, the mean (``mean_file``, or
``mean_value`` per channel) and ``input_scale`` = ``scale``. A mean image of another size than
the net's input is cut to the input's size at the centre, as the data layer subtracts it from its
TEST centre crop; one smaller than the input is reduced to one value per channel.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from engine.data.errors import DataError
from engine.data.paths import DataPaths
from engine.data.transformer import load_mean_file
from proto import caffe_pb2


@dataclass(frozen=True)
class Preprocess:
    """The Classifier's options: ``mean`` (K, or K x H x W), ``input_scale``, ``raw_scale``,
    ``channel_swap``, and ``image_dims`` (H, W) images are resized to (None: the input's size)."""

    mean: np.ndarray | None = None
    input_scale: float | None = None
    raw_scale: float | None = 255.0
    channel_swap: tuple[int, ...] | None = None
    image_dims: tuple[int, int] | None = None

    def with_changes(self, **changes: object) -> Preprocess:
        return replace(self, **changes)  # type: ignore[arg-type]


def from_transform(
    transform: caffe_pb2.TransformationParameter | None,
    input_shape: Sequence[int],
    net_path: str | os.PathLike[str] | None = None,
) -> Preprocess:
    """The options that preprocess as a data layer with ``transform`` did, for an input of
    ``input_shape`` (N, K, H, W); a relative mean file is looked for beside ``net_path``."""
    channels = int(input_shape[1])
    swap = (2, 1, 0) if channels == 3 else None
    if transform is None:
        return Preprocess(channel_swap=swap)
    mean: np.ndarray | None = None
    if transform.HasField("mean_file"):
        paths = DataPaths(search_from=(_folder(net_path),) if net_path else ())
        mean = load_mean_file(transform.mean_file, paths)
    elif len(transform.mean_value):
        values = np.asarray(transform.mean_value, np.float32)
        mean = np.full(channels, values[0], np.float32) if values.size == 1 else values
    scale = float(transform.scale) if transform.HasField("scale") and transform.scale != 1 else None
    return Preprocess(fit_mean(mean, input_shape), scale, 255.0, swap)


def read_transform(net: caffe_pb2.NetParameter) -> caffe_pb2.TransformationParameter | None:
    """The transform a deploy net carries on its Input layer, if any."""
    for layer in net.layer:
        if layer.type == "Input" and layer.HasField("transform_param"):
            return layer.transform_param
    return None


def fit_mean(mean: np.ndarray | None, input_shape: Sequence[int]) -> np.ndarray | None:
    """The mean as the Transformer takes it for an input of ``input_shape``: per channel as it is,
    an image cut to the input's H x W at the centre, or (smaller than the input) per channel."""
    if mean is None:
        return None
    mean = np.asarray(mean, np.float32)
    channels, height, width = (int(d) for d in input_shape[1:4])
    if mean.ndim == 1:
        if mean.size != channels:
            raise DataError(f"{mean.size} mean values for an input of {channels} channels")
        return mean
    if mean.ndim == 2:
        mean = mean[None]
    if mean.ndim != 3 or mean.shape[0] != channels:
        raise DataError(f"a mean of shape {mean.shape} for an input of {channels} channels")
    h, w = mean.shape[1:]
    if (h, w) == (height, width):
        return mean
    if h >= height and w >= width:
        top, left = (h - height) // 2, (w - width) // 2
        return np.ascontiguousarray(mean[:, top : top + height, left : left + width])
    return mean.reshape(channels, -1).mean(axis=1)


def load_mean(path: str) -> np.ndarray:
    """A mean from ``.binaryproto`` (Caffe's) or ``.npy`` (classify.py's)."""
    if path.lower().endswith(".npy"):
        try:  # allow_pickle stays off: opening a file never runs its code
            return np.load(path, allow_pickle=False).astype(np.float32)
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read the mean {path}: {exc}") from exc
    return load_mean_file(path).astype(np.float32)


def _folder(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(path)).parent
