"""DIGITS's four ways of bringing an image (C, H, W) to a size, on OpenCV's INTER_LINEAR resize.

- squash: stretch to the size, aspect ratio lost;
- crop: scale (aspect kept) until the size is covered, then cut the centre;
- fill: scale (aspect kept) until the image fits inside, then pad both sides with random noise;
- half_crop: scale to the average of those two scales, cut the long side's overflow and pad the
  short side with noise (half cropped, half filled).

As DIGITS does: the scaled lengths are rounded, the padding is split evenly (the scaled length
grown by one where the difference is odd), the crop is centred. The noise comes from ``rng``.
"""

from __future__ import annotations

import numpy as np

from engine.data.images import resize_bilinear

MODES = ("squash", "crop", "fill", "half_crop")


def resize_to(
    image: np.ndarray, height: int, width: int, mode: str, rng: np.random.Generator | None = None
) -> np.ndarray:
    if mode not in MODES:
        raise ValueError(f"unknown resize mode {mode!r} (known: {', '.join(MODES)})")
    _, h, w = image.shape
    if (h, w) == (height, width):
        return image
    if mode == "squash":
        return resize_bilinear(image, height, width)
    width_ratio, height_ratio = w / width, h / height
    wide = width_ratio > height_ratio  # wider than the target shape: width is the long side
    if mode == "crop":
        scale = height_ratio if wide else width_ratio
    elif mode == "fill":
        scale = width_ratio if wide else height_ratio
    else:
        scale = (width_ratio + height_ratio) / 2
    new_h, new_w = _scaled(h, w, scale, height, width, mode, wide)
    image = resize_bilinear(image, new_h, new_w)
    if mode in ("crop", "half_crop"):
        image = _centre_crop(image, height, width)
    if mode in ("fill", "half_crop"):
        image = _pad_with_noise(image, height, width, rng)
    return image


def _scaled(h: int, w: int, scale: float, height: int, width: int, mode: str, wide: bool) -> tuple[int, int]:
    new_h, new_w = max(1, int(round(h / scale))), max(1, int(round(w / scale)))
    if mode == "crop":  # the covering side is exact, the other rounds
        return (height, new_w) if wide else (new_h, width)
    if mode == "fill":
        new_h, new_w = (new_h, width) if wide else (height, new_w)
    if wide and (height - new_h) % 2:
        new_h += 1
    elif not wide and (width - new_w) % 2:
        new_w += 1
    return min(new_h, height) if wide else new_h, min(new_w, width) if not wide else new_w


def _centre_crop(image: np.ndarray, height: int, width: int) -> np.ndarray:
    _, h, w = image.shape
    top = max(0, int(round((h - height) / 2)))
    left = max(0, int(round((w - width) / 2)))
    return image[:, top : top + height, left : left + width]


def _pad_with_noise(
    image: np.ndarray, height: int, width: int, rng: np.random.Generator | None
) -> np.ndarray:
    c, h, w = image.shape
    if (h, w) == (height, width):
        return np.ascontiguousarray(image)
    out = (rng or np.random.default_rng()).integers(
        0, 255, (c, height, width), dtype=np.uint8
    )  # DIGITS draws 0..254
    top, left = (height - h) // 2, (width - w) // 2
    out[:, top : top + h, left : left + w] = image[:, :height, :width]
    return out
