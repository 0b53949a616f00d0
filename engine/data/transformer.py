"""Caffe's DataTransformer: crop, mirror, subtract the mean, scale, for a whole batch at once.

Per item, as Caffe's ``Transform(datum)``: a random ``mirror`` (in TRAIN *and* TEST, as Caffe does)
and a ``crop_size`` window (random in TRAIN, centred in TEST: offset ``(H - crop) // 2``); each
output pixel is ``(x[src] - mean[src]) * scale``, where ``src`` is the pixel's position in the
uncropped, unmirrored input, ``mean`` is the ``mean_file`` image (of the input's full size) or the
``mean_value`` of its channel (one value for all channels, or one per channel). Arithmetic is done
in the output dtype, so float32 results equal Caffe's bit for bit.

``mean_file`` and ``mean_value`` together are an error; so are ``force_color`` and ``force_gray``
together when an encoded image has to be decoded. Random draws come from the Generator passed to
each call, so a caller that seeds one per batch gets the same batch whenever it asks for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.blob import proto_to_array
from engine.data.errors import DataError
from engine.data.paths import DEFAULT, DataPaths
from proto import caffe_pb2
from proto.binaryio import read_blob
from proto.errors import FormatError


class DataTransformer:
    def __init__(
        self,
        param: caffe_pb2.TransformationParameter,
        phase: int,
        dtype: Any = np.float32,
        data_paths: DataPaths = DEFAULT,
    ) -> None:
        self.param = param
        self.phase = phase
        self.dtype = np.dtype(dtype)
        self.scale = self.dtype.type(param.scale)
        self.crop = int(param.crop_size)
        self.mean: np.ndarray | None = None
        if param.HasField("mean_file"):
            if len(param.mean_value):
                raise DataError("Cannot specify mean_file and mean_value at the same time")
            self.mean = load_mean_file(param.mean_file, data_paths).astype(self.dtype)
        self.mean_values = np.asarray(param.mean_value, self.dtype)

    @property
    def needs_random(self) -> bool:
        return self.param.mirror or (self.phase == caffe_pb2.TRAIN and self.crop > 0)

    def decode_mode(self) -> str | None:
        """How encoded images are decoded: None (as stored), "color" or "gray"."""
        if self.param.force_color and self.param.force_gray:
            raise DataError("cannot set both force_color and force_gray")
        return "color" if self.param.force_color else "gray" if self.param.force_gray else None

    def output_shape(self, item_shape: tuple[int, ...]) -> tuple[int, int, int]:
        """The (C, H, W) an item of ``item_shape`` becomes (Caffe's InferBlobShape)."""
        c, h, w = item_shape
        if c <= 0:
            raise DataError(f"an item needs at least one channel, got shape {item_shape}")
        if self.crop and (h < self.crop or w < self.crop):
            raise DataError(f"crop_size {self.crop} is larger than the {h}x{w} input")
        return (c, self.crop or h, self.crop or w)

    def __call__(
        self, items: np.ndarray | Sequence[np.ndarray], rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """(N, C, H, W) of the output dtype from a stacked batch or a list of (C, H, W) items."""
        if isinstance(items, np.ndarray):
            return self._transform(items, rng)
        if len({item.shape for item in items}) <= 1:
            return self._transform(np.stack(items), rng)
        # Items of different sizes: each is transformed alone and must come out at one size.
        out = [self._transform(item[None], rng)[0] for item in items]
        if len({o.shape for o in out}) > 1:
            shapes = sorted({item.shape for item in items})
            raise DataError(
                f"items of different sizes {shapes} in one batch need a crop_size to fit together"
            )
        return np.stack(out)

    def _transform(self, x: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        n, c, h, w = x.shape
        ch, cw = self.output_shape((c, h, w))[1:]
        mean = self._mean_for(c, h, w)
        mirror = np.zeros(n, bool)
        if self.param.mirror:
            mirror = self._rng(rng).integers(0, 2, n).astype(bool)
        if self.crop and self.phase == caffe_pb2.TRAIN:
            h_off = self._rng(rng).integers(0, h - ch + 1, n)
            w_off = self._rng(rng).integers(0, w - cw + 1, n)
        else:
            h_off = np.full(n, (h - ch) // 2)
            w_off = np.full(n, (w - cw) // 2)
        if mirror.any() or (h_off != h_off[0]).any() or (w_off != w_off[0]).any():
            rows = h_off[:, None] + np.arange(ch)
            cols = w_off[:, None] + np.arange(cw)
            cols = np.where(mirror[:, None], cols[:, ::-1], cols)
            channel = np.arange(c)[None, :, None, None]
            where: tuple[Any, ...] = (channel, rows[:, None, :, None], cols[:, None, None, :])
            picked = x[(np.arange(n)[:, None, None, None], *where)]
        else:  # one window for the whole batch: a plain slice
            where = (slice(None), slice(h_off[0], h_off[0] + ch), slice(w_off[0], w_off[0] + cw))
            picked = x[(slice(None), *where)]
        out = picked.astype(self.dtype)
        if mean is not None:
            out -= mean[where]
        elif self.mean_values.size:
            out -= self.mean_values[:, None, None] if self.mean_values.size > 1 else self.mean_values[0]
        if self.scale != 1:
            out *= self.scale
        return out

    def _mean_for(self, c: int, h: int, w: int) -> np.ndarray | None:
        if self.mean is not None and self.mean.shape != (c, h, w):
            raise DataError(
                f"the mean file {self.param.mean_file} is {'x'.join(map(str, self.mean.shape))} (CxHxW) "
                f"but the data is {c}x{h}x{w}"
            )
        if self.mean_values.size not in (0, 1, c):
            raise DataError(f"Specify either 1 mean_value or as many as channels: {c}")
        return self.mean

    @staticmethod
    def _rng(rng: np.random.Generator | None) -> np.random.Generator:
        if rng is None:
            raise DataError("a random crop or mirror needs a random generator")
        return rng


def load_mean_file(path: str, data_paths: DataPaths = DEFAULT) -> np.ndarray:
    """The (C, H, W) mean image of a ``.binaryproto`` BlobProto (its first item if it has several)."""
    where = data_paths.resolve(path)
    try:
        array = proto_to_array(read_blob(where), np.float64)
    except OSError as exc:
        raise DataError(f"cannot read the mean file {where}: {exc.strerror or exc}") from exc
    except (FormatError, ValueError) as exc:
        raise DataError(f"the mean file {where} is not a BlobProto: {exc}") from exc
    if array.ndim < 3 or array.size == 0:
        raise DataError(f"the mean file {where} holds a blob of shape {array.shape}, not an image")
    return array.reshape((-1, *array.shape[-3:]))[0]
