"""Images as Caffe sees them through OpenCV: uint8, channels first, colour in BGR order.

``mode`` chooses the decoding as Caffe's flags do: None is OpenCV's IMREAD_ANYCOLOR, what Caffe's
DecodeDatumToCVMatNative asks for (a gray image stays 1 channel; any other, with or without alpha
or a palette, becomes 3 BGR channels, the alpha dropped), "color" gives 3 channels (IMREAD_COLOR)
and "gray" one (IMREAD_GRAYSCALE). Pillow decodes; its JPEG decoder may differ from
OpenCV's by a grey level here and there, PNG and other lossless files decode identically.
"""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING

import numpy as np

from engine.data.errors import DataError
from proto.inputs import read_regular_bytes

if TYPE_CHECKING:
    from PIL import Image

_NATIVE = {  # OpenCV's IMREAD_ANYCOLOR: one channel stays one, several become BGR
    "L": "L",
    "1": "L",
    "RGB": "RGB",
    "P": "RGB",
    "CMYK": "RGB",
    "YCbCr": "RGB",
    "RGBA": "RGB",
    "LA": "RGB",
}


def decode_image(data: bytes, mode: str | None = None, name: str = "<image>") -> np.ndarray:
    """An encoded image (PNG, JPEG, ...) as a (C, H, W) uint8 array."""
    from PIL import Image, UnidentifiedImageError  # only a net reading images loads PIL

    try:
        with Image.open(io.BytesIO(data)) as image:
            return _to_array(image, mode, name)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise DataError(f"{name}: cannot decode the image: {exc}") from exc


def read_image(path: str | os.PathLike[str], mode: str | None = "color") -> np.ndarray:
    """An image file as a (C, H, W) uint8 array; a missing or unreadable file names itself."""
    try:
        data = read_regular_bytes(path)
    except OSError as exc:
        raise DataError(f"Could not load {os.fspath(path)}: {exc.strerror or exc}") from exc
    return decode_image(data, mode, os.fspath(path))


def _to_array(image: Image.Image, mode: str | None, name: str) -> np.ndarray:
    from PIL import Image

    if image.mode.startswith("I;16"):  # 16-bit gray: OpenCV without IMREAD_ANYDEPTH keeps the high byte
        high = (np.asarray(image).astype(np.uint16) >> 8).astype(np.uint8)
        image = Image.fromarray(high, "L")
    if image.mode not in _NATIVE:  # 16-bit and float images: Caffe reads 8-bit pixels only
        raise DataError(f"{name}: images of mode {image.mode} are not supported (8-bit gray or colour only)")
    target = {"gray": "L", "color": "RGB"}.get(mode or "", _NATIVE[image.mode])
    pixels = np.asarray(image.convert(target), dtype=np.uint8)
    if pixels.ndim == 2:
        return pixels[None].copy()
    rgb_to_bgr = [2, 1, 0, 3][: pixels.shape[2]]
    return np.ascontiguousarray(pixels.transpose(2, 0, 1)[rgb_to_bgr])


def resize_bilinear(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """(C, H, W) uint8 resized as OpenCV's INTER_LINEAR: pixel centres aligned, edges clamped.

    OpenCV rounds through 11-bit fixed-point weights; this rounds the exact value, so a pixel can
    differ from OpenCV's by one grey level.
    """
    _, h, w = image.shape
    if (h, w) == (height, width):
        return image.copy()
    y0, y1, fy = _taps(h, height)
    x0, x1, fx = _taps(w, width)
    src = image.astype(np.float32)
    rows = src[:, y0] * (1 - fy)[:, None] + src[:, y1] * fy[:, None]
    out = rows[:, :, x0] * (1 - fx) + rows[:, :, x1] * fx
    return np.clip(np.floor(out + 0.5), 0, 255).astype(np.uint8)


def _taps(size: int, new_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pos = (np.arange(new_size, dtype=np.float64) + 0.5) * (size / new_size) - 0.5
    first = np.floor(pos).astype(np.int64)
    frac = (pos - first).astype(np.float32)
    frac[first < 0] = 0
    first = np.clip(first, 0, size - 1)
    frac[first >= size - 1] = 0
    return first, np.minimum(first + 1, size - 1), frac
