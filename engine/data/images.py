"""Images as Caffe sees them through OpenCV: uint8, channels first, colour in BGR order.

``mode`` chooses the decoding as Caffe's flags do: None is ``imdecode(..., -1)``, OpenCV's
IMREAD_UNCHANGED, what Caffe's DecodeDatumToCVMatNative asks for when a Data layer reads an encoded
Datum without force_color/force_gray (a gray image stays 1 channel, colour is 3 BGR channels, and
an image with alpha, a PNG's transparency chunk included, keeps it: 4 channels, BGRA; a 16-bit
image stays 16-bit there, which Caffe's DataTransformer refuses, so it is a DataError here),
"color" gives 3 channels (IMREAD_COLOR) and "gray" one (IMREAD_GRAYSCALE). Pillow decodes.
Colour reaches gray as OpenCV's own decoders take it there, which depends on the format: libjpeg
hands over the luma plane, libpng's ``rgb_to_gray`` truncates 0.299/0.587 weights in 1/32768ths,
everything else goes through OpenCV's 14-bit BGR2Gray. Compared with opencv-python-headless 5.1's
``imread`` on PNG (RGB, RGBA, gray, palette, 16-bit), BMP, PPM, TIFF and JPEG (libjpeg-turbo on
both sides) in the "color" and "gray" modes, and ``resize`` over 2,000 random sizes: no pixel
differs. (The unchanged mode's channel counts follow OpenCV's PNG decoder's rules.)

An image whose header claims more than ``MAX_PIXELS`` is refused from its header, before anything
is decoded: a small PNG of zeros can claim 100,000 x 100,000 (a decompression bomb).
"""

from __future__ import annotations

import io
import logging
import os
import re
import warnings
from typing import TYPE_CHECKING

import numpy as np

from engine.data.errors import DataError
from proto.inputs import read_regular_bytes

if TYPE_CHECKING:
    from PIL import Image

_NATIVE = {  # one channel stays one, several become BGR (the family "gray"/"color" convert from)
    "L": "L",
    "1": "L",
    "RGB": "RGB",
    "P": "RGB",
    "CMYK": "RGB",
    "YCbCr": "RGB",
    "RGBA": "RGB",
    "LA": "RGB",
}

# Pillow logs some damaged files' faults (a TIFF's samples per pixel) as well as raising: with no
# handler of its own, Python would print them on stderr beside our one line.
logging.getLogger("PIL").addHandler(logging.NullHandler())

MAX_PIXELS = 8192 * 8192  # 64 megapixels: 192 MB as BGR bytes, far past any image a net reads
_BOMB = "for one image: refused before decoding it (a decompression bomb?)"


def decode_image(data: bytes, mode: str | None = None, name: str = "<image>") -> np.ndarray:
    """An encoded image (PNG, JPEG, ...) as a (C, H, W) uint8 array; any way the bytes fail to
    decode is a DataError naming ``name``."""
    from PIL import Image, UnidentifiedImageError  # only a net reading images loads PIL

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow's warnings on damaged files: the error says it
            with Image.open(io.BytesIO(data)) as image:
                _check_size(image.size, name)
                return _to_array(image, mode, name)
    except DataError:
        raise
    except UnidentifiedImageError:
        what = (
            "an empty file"
            if not data
            else "not an image in a format we read (PNG, JPEG, BMP, PPM, TIFF, GIF...)"
        )
        raise DataError(f"{name}: cannot decode the image: {what}") from None
    except Image.DecompressionBombError as exc:  # Pillow's own, stricter check on opening
        numbers = [f"{int(n):,}" for n in re.findall(r"(\d+) pixels", str(exc))]
        said = (
            f"it claims {numbers[0]} pixels, past Pillow's limit of {numbers[1]}"
            if len(numbers) == 2
            else exc
        )
        raise DataError(f"{name}: cannot decode the image: {said} {_BOMB}") from None
    except MemoryError:
        raise DataError(f"{name}: cannot decode the image: not enough memory") from None
    except Exception as exc:  # damaged bytes reach Pillow's parsers in many ways
        reason = str(exc) or type(exc).__name__  # (SyntaxError "broken PNG file", struct.error, ...)
        raise DataError(f"{name}: cannot decode the image: {reason}") from exc


def _check_size(size: tuple[int, int], name: str) -> None:
    width, height = size
    if width * height > MAX_PIXELS:
        raise DataError(
            f"{name}: cannot decode the image: it claims {width:,} x {height:,} pixels, past the limit of "
            f"{MAX_PIXELS:,} (8192 x 8192) {_BOMB}"
        )
    if width < 1 or height < 1:
        raise DataError(f"{name}: cannot decode the image: it claims {width} x {height} pixels (empty)")


def read_image(path: str | os.PathLike[str], mode: str | None = "color") -> np.ndarray:
    """An image file as a (C, H, W) uint8 array; a missing or unreadable file names itself."""
    try:
        data = read_regular_bytes(path)
    except OSError as exc:
        raise DataError(f"Could not load {os.fspath(path)}: {exc.strerror or exc}") from exc
    except ValueError as exc:  # a NUL byte in the name
        raise DataError(f"Could not load {os.fspath(path)!r}: {exc}") from exc
    return decode_image(data, mode, os.fspath(path))


def _to_array(image: Image.Image, mode: str | None, name: str) -> np.ndarray:
    from PIL import Image

    if mode is None and (image.mode.startswith("I;16") or image.mode in ("I", "F")):
        bits = "16" if image.mode.startswith("I;16") else "32"
        raise DataError(
            f"{name}: a {bits}-bit image: Caffe decodes an encoded Datum unchanged and its "
            "DataTransformer takes 8-bit images only"
        )
    if image.mode.startswith("I;16"):  # 16-bit gray: OpenCV without IMREAD_ANYDEPTH keeps the high byte
        high = (np.asarray(image).astype(np.uint16) >> 8).astype(np.uint8)
        image = Image.fromarray(high, "L")
    if image.mode not in _NATIVE:  # 16-bit and float images: Caffe reads 8-bit pixels only
        raise DataError(f"{name}: images of mode {image.mode} are not supported (8-bit gray or colour only)")
    target = {"gray": "L", "color": "RGB"}.get(mode or "", _unchanged(image))
    if target == "L" and _NATIVE[image.mode] == "RGB":
        return _gray_from_colour(image)[None]
    pixels = np.asarray(image.convert(target), dtype=np.uint8)
    if pixels.ndim == 2:
        return pixels[None].copy()
    rgb_to_bgr = [2, 1, 0, 3][: pixels.shape[2]]
    return np.ascontiguousarray(pixels.transpose(2, 0, 1)[rgb_to_bgr])


def _unchanged(image: Image.Image) -> str:
    """The Pillow mode of OpenCV's IMREAD_UNCHANGED: libpng's gray+alpha, RGBA, and RGB or palette
    with a transparency chunk come as 4 channels; any other colour as 3, gray as 1."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode in ("RGB", "P") and "transparency" in image.info):
        return "RGBA"
    return _NATIVE[image.mode]


def _gray_from_colour(image: Image.Image) -> np.ndarray:
    """(H, W) gray of a colour image, as OpenCV's decoder for its format computes it."""
    if image.format == "JPEG":
        image.draft("L", image.size)  # libjpeg's own colour conversion: the Y plane
        return np.asarray(image.convert("L"), dtype=np.uint8)
    r, g, b = np.asarray(image.convert("RGB"), dtype=np.int32).transpose(2, 0, 1)
    if image.format == "PNG":  # png_set_rgb_to_gray(0.299, 0.587), truncated as libpng does
        return ((9797 * r + 19234 * g + 3737 * b) >> 15).astype(np.uint8)
    return ((4899 * r + 9617 * g + 1868 * b + 8192) >> 14).astype(np.uint8)  # cvtColor's BGR2Gray


_COEF_BITS = 11  # OpenCV's INTER_RESIZE_COEF_BITS: weights in 1/2048ths


def resize_bilinear(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """(C, H, W) uint8 resized as OpenCV's INTER_LINEAR: pixel centres aligned, edges clamped, in
    its fixed point: 11-bit weights, a horizontal pass kept whole, a vertical one as its SIMD kernel
    computes it (each product's high half, then rounded). OpenCV 4 and older finish each row's last
    (width x channels) % 8 values in plain C, which can round one grey level the other way there."""
    _, h, w = image.shape
    if (h, w) == (height, width):
        return image.copy()
    x0, x1, a0, a1 = _taps(w, width, clamp=True)
    y0, y1, b0, b1 = _taps(h, height, clamp=False)
    src = image.astype(np.int32)
    rows = (src[:, :, x0] * a0 + src[:, :, x1] * a1) >> 4  # as 16-bit lanes, then a high multiply
    out = ((rows[:, y0] * b0[:, None]) >> 16) + ((rows[:, y1] * b1[:, None]) >> 16)
    return np.clip((out + 2) >> 2, 0, 255).astype(np.uint8)


def _taps(size: int, new_size: int, clamp: bool) -> tuple[np.ndarray, ...]:
    """Source indices and fixed-point weights of each output pixel, computed in float32 as OpenCV
    does. Columns past an edge take that edge pixel whole; rows keep their fraction and clip the
    row index instead (OpenCV treats the two axes differently; only the rounding can tell)."""
    scale = size / new_size
    pos = ((np.arange(new_size, dtype=np.float64) + 0.5) * scale - 0.5).astype(np.float32)
    first = np.floor(pos).astype(np.int64)
    frac = pos - first.astype(np.float32)
    if clamp:
        outside = (first < 0) | (first >= size - 1)
        frac[outside] = 0
        first = np.clip(first, 0, size - 1)
    one = np.float32(1 << _COEF_BITS)
    w0 = np.rint((np.float32(1) - frac) * one).astype(np.int32)
    w1 = np.rint(frac * one).astype(np.int32)
    return np.clip(first, 0, size - 1), np.clip(first + 1, 0, size - 1), w0, w1
