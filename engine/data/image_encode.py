"""Images (C, H, W uint8, BGR) encoded into a file format, as Caffe's ``cv::imencode`` is asked to.

OpenCV writes PNG at compression level 1 and JPEG at quality 95 by default; we ask Pillow for the
same, so the pixels read back are OpenCV's (PNG: identical) though the bytes are Pillow's.
"""

from __future__ import annotations

import io

import numpy as np

from engine.data.errors import DataError

# Caffe's encode_type (a file extension, lower case) -> Pillow's format and its options.
_FORMATS: dict[str, tuple[str, dict[str, object]]] = {
    "png": ("PNG", {"compress_level": 1}),
    "jpg": ("JPEG", {"quality": 95}),
    "jpeg": ("JPEG", {"quality": 95}),
    "jpe": ("JPEG", {"quality": 95}),
    "bmp": ("BMP", {}),
    "dib": ("BMP", {}),
    "ppm": ("PPM", {}),
    "pgm": ("PPM", {}),
    "pnm": ("PPM", {}),
    "tif": ("TIFF", {}),
    "tiff": ("TIFF", {}),
}


def check_encoding(extension: str) -> None:
    """Refuse an encoding we cannot write, naming those we can."""
    if extension.lower() not in _FORMATS:
        known = ", ".join(sorted(_FORMATS))
        raise DataError(f"cannot encode images as '.{extension}' (known: {known})")


def encode_image(pixels: np.ndarray, extension: str) -> bytes:
    """``pixels`` (1 or 3 channels, BGR) as the bytes of a ``.extension`` file."""
    from PIL import Image  # only writing images loads PIL

    check_encoding(extension)
    fmt, options = _FORMATS[extension.lower()]
    if pixels.shape[0] == 1:
        image = Image.fromarray(np.ascontiguousarray(pixels[0]), "L")
    else:
        image = Image.fromarray(np.ascontiguousarray(pixels[2::-1].transpose(1, 2, 0)), "RGB")
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()
