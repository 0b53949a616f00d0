"""WindowData: R-CNN's training windows, as Caffe's WindowDataLayer.

Tops: data (N, C, crop, crop) and label (N,). Every batch samples ``N - int(N * fg_fraction)``
background windows, then the rest from the foreground ones, uniformly with replacement (see
engine.data.window_file for the file and the thresholds). Each window is cut from its image (read
in colour, BGR) and warped to crop_size x crop_size (bilinear). With ``context_pad`` or
``crop_mode: "square"`` the window is first grown (square: to its longer side) so that after the
warp ``context_pad`` pixels of context surround it; the part outside the image is left as 0 and
only the part inside is warped, keeping its place. ``mirror`` flips a window half the time (its
padding too). Pixels become ``(pixel - mean) * scale``, where the mean is the mean_file image at the
same place (centred by ``(mean width - crop) / 2`` on both axes, as Caffe does) or the channel's
mean_value, and ``scale`` is window_data_param.scale (Caffe ignores transform_param.scale here).
Arithmetic is in the net's float type, Caffe's order. No gradient.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.blob import Blob
from engine.data.errors import DataError
from engine.data.images import decode_image, resize_bilinear
from engine.data.paths import DataPaths
from engine.data.window_file import WindowFile, read_window_file
from engine.layers._base_data import BasePrefetchingDataLayer, BatchMaker, log
from engine.layers.registry import register_layer
from proto.inputs import read_regular_bytes


@register_layer("WindowData")
class WindowDataLayer(BasePrefetchingDataLayer):
    exact_num_top = 2
    family = "data"
    params = ("window_data_param", "transform_param")
    top_names = ("data", "label")
    template = (  # R-CNN's fine-tuning settings (Caffe's finetune_pascal_detection); no window file yet
        "window_data_param { batch_size: 128 context_pad: 16 fg_threshold: 0.5 bg_threshold: 0.5 "
        "fg_fraction: 0.25 } transform_param { crop_size: 227 mirror: true }"
    )

    def data_layer_setup(self, top: list[Blob]) -> BatchMaker:
        p = self.param.window_data_param
        crop = int(self.param.transform_param.crop_size)
        if crop <= 0:
            raise self.error("transform_param.crop_size must be positive (the warped window's size)")
        if p.batch_size <= 0:
            raise self.error("window_data_param.batch_size must be positive")
        if 2 * p.context_pad >= crop:
            raise self.error(f"context_pad {p.context_pad} leaves no room in crop_size {crop}")
        if p.crop_mode not in ("warp", "square"):
            raise self.error(f'crop_mode must be "warp" or "square", got {p.crop_mode!r}')
        where = self.data_paths
        windows = read_window_file(where.resolve(p.source), p.fg_threshold, p.bg_threshold, p.root_folder)
        if not len(windows.foreground) or not len(windows.background):
            raise self.error(
                f"the window file {p.source} needs foreground and background windows "
                f"(found {len(windows.foreground)} and {len(windows.background)})"
            )
        channels = windows.images[-1][1][0]
        if channels != 3:
            raise self.error(f"images are read in colour (3 channels), the window file says {channels}")
        log.info("Number of images: %d", len(windows.images))
        for label, count in sorted(windows.label_counts.items()):
            log.info("class %d has %d samples", label, count)
        mean, mean_values = self.transformer.mean, self.transformer.mean_values
        if mean is not None:
            c, mh, mw = mean.shape
            off = (mw - crop) // 2
            if c != channels or mw < crop or off + crop > mh:
                raise self.error(
                    f"the mean file is {c}x{mh}x{mw}; WindowData needs {channels} channels and a "
                    f"centred {crop}x{crop} window in it"
                )
        elif mean_values.size not in (0, 1, channels):
            raise self.error(f"Specify either 1 mean_value or as many as channels: {channels}")
        top[0].reshape((p.batch_size, channels, crop, crop))
        top[1].reshape((p.batch_size,))
        warp = Warp(crop, p.context_pad, p.crop_mode == "square", self.dtype)
        cache = (
            {i: _read_bytes(path, where) for i, (path, _) in enumerate(windows.images)}
            if p.cache_images
            else None
        )
        return WindowBatches(
            windows, warp, p.batch_size, p.fg_fraction, bool(self.param.transform_param.mirror),
            Pixels(mean, mean_values, p.scale, crop, self.dtype), self.seed, cache, where,
        )  # fmt: skip


def _read_bytes(path: str, where: DataPaths) -> bytes:
    try:
        return read_regular_bytes(where.resolve(path))
    except OSError as exc:
        raise DataError(f"Could not open or find file {path}: {exc.strerror or exc}") from exc


def _round(x: Any) -> int:
    """C's round(): halves away from zero."""
    value = float(x)
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


class Warp:
    """Where a window lands: the image region to take, the size to warp it to, its offset in the crop."""

    def __init__(self, crop: int, context_pad: int, square: bool, dtype: Any) -> None:
        self.crop, self.context_pad, self.square = crop, context_pad, square
        self.f = np.dtype(dtype).type

    def __call__(
        self, box: tuple[int, int, int, int], height: int, width: int, mirror: bool
    ) -> tuple[tuple[int, int, int, int], tuple[int, int], tuple[int, int]]:
        """((x1, y1, x2, y2) to cut, (rows, cols) to warp to, (pad_h, pad_w))."""
        x1, y1, x2, y2 = box
        crop, f = self.crop, self.f
        if not (self.context_pad > 0 or self.square):
            return box, (crop, crop), (0, 0)
        context_scale = f(crop) / f(crop - 2 * self.context_pad)
        half_h, half_w = f((y2 - y1 + 1) / 2.0), f((x2 - x1 + 1) / 2.0)
        center_x, center_y = f(x1) + half_w, f(y1) + half_h
        if self.square:
            half_h = half_w = max(half_h, half_w)
        x1, x2 = _round(center_x - half_w * context_scale), _round(center_x + half_w * context_scale)
        y1, y2 = _round(center_y - half_h * context_scale), _round(center_y + half_h * context_scale)
        unclipped_h, unclipped_w = y2 - y1 + 1, x2 - x1 + 1
        pad_x1, pad_y1 = max(0, -x1), max(0, -y1)
        pad_x2, pad_y2 = max(0, x2 - width + 1), max(0, y2 - height + 1)
        x1, x2, y1, y2 = x1 + pad_x1, x2 - pad_x2, y1 + pad_y1, y2 - pad_y2
        scale_x, scale_y = f(crop) / f(unclipped_w), f(crop) / f(unclipped_h)
        rows = _round(f(y2 - y1 + 1) * scale_y)
        cols = _round(f(x2 - x1 + 1) * scale_x)
        pad_h = _round(f(pad_y1) * scale_y)
        pad_w = _round(f(pad_x2 if mirror else pad_x1) * scale_x)
        rows, cols = min(rows, crop - pad_h), min(cols, crop - pad_w)
        return (x1, y1, x2, y2), (rows, cols), (pad_h, pad_w)


class Pixels:
    """(pixel - mean) * scale of a warped window at its place in the crop."""

    def __init__(self, mean: np.ndarray | None, mean_values: np.ndarray, scale: float, crop: int, dtype: Any):
        self.dtype = np.dtype(dtype)
        self.mean = None if mean is None else mean.astype(self.dtype)
        self.offset = 0 if mean is None else (mean.shape[2] - crop) // 2
        self.mean_values = mean_values.astype(self.dtype)
        self.scale = self.dtype.type(scale)

    def __call__(self, patch: np.ndarray, pad_h: int, pad_w: int) -> np.ndarray:
        out = patch.astype(self.dtype)
        c, rows, cols = patch.shape
        if self.mean is not None:
            top, left = self.offset + pad_h, self.offset + pad_w
            out -= self.mean[:, top : top + rows, left : left + cols]
        elif self.mean_values.size:
            out -= self.mean_values[:, None, None] if self.mean_values.size > 1 else self.mean_values[0]
        out *= self.scale
        return out


class WindowBatches:
    """Batch ``i`` of a WindowData layer: its windows drawn from (seed, i), so it can be made again."""

    def __init__(
        self,
        windows: WindowFile,
        warp: Warp,
        batch_size: int,
        fg_fraction: float,
        mirror: bool,
        pixels: Pixels,
        seed: int,
        cache: dict[int, bytes] | None,
        where: DataPaths,
    ) -> None:
        self.windows, self.warp, self.pixels, self.seed, self.cache = windows, warp, pixels, seed, cache
        self.where = where  # the net's DataPaths: where the images are looked for
        self.batch_size, self.mirror = batch_size, mirror
        self.num_fg = int(np.float32(batch_size) * np.float32(fg_fraction))

    def __call__(self, index: int) -> tuple[np.ndarray, ...]:
        rng = np.random.default_rng([self.seed, index])
        crop = self.warp.crop
        data = np.zeros((self.batch_size, 3, crop, crop), self.pixels.dtype)
        labels = np.zeros(self.batch_size, self.pixels.dtype)
        kinds = [self.windows.background] * (self.batch_size - self.num_fg) + [
            self.windows.foreground
        ] * self.num_fg
        for item, pool in enumerate(kinds):
            window = pool[rng.integers(len(pool))]
            mirror = self.mirror and bool(rng.integers(2))
            image_index = int(window[0])
            image = self._image(image_index)
            box = (int(window[3]), int(window[4]), int(window[5]), int(window[6]))
            (x1, y1, x2, y2), (rows, cols), (pad_h, pad_w) = self.warp(
                box, image.shape[1], image.shape[2], mirror
            )
            if (
                not (0 <= x1 <= x2 < image.shape[2] and 0 <= y1 <= y2 < image.shape[1])
                or rows < 1
                or cols < 1
            ):
                path = self.windows.images[image_index][0]
                raise DataError(
                    f"window {box} of image {image_index} ({path}, {image.shape[2]}x{image.shape[1]}) "
                    "does not fit inside the image"
                )
            patch = resize_bilinear(image[:, y1 : y2 + 1, x1 : x2 + 1], rows, cols)
            if mirror:
                patch = patch[:, :, ::-1]
            data[item, :, pad_h : pad_h + rows, pad_w : pad_w + cols] = self.pixels(patch, pad_h, pad_w)
            labels[item] = window[1]
        return data, labels

    def _image(self, index: int) -> np.ndarray:
        path = self.windows.images[index][0]
        data = self.cache[index] if self.cache is not None else _read_bytes(path, self.where)
        return decode_image(data, "color", path)
