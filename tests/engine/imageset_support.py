"""Images made for the data set tests: every kind Caffe's tools meet, with their pixels known."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def bgr(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) RGB as Caffe stores it: (3, H, W), BGR."""
    return np.ascontiguousarray(rgb[:, :, ::-1].transpose(2, 0, 1))


def png_gray(rgb: np.ndarray) -> np.ndarray:
    """libpng's rgb_to_gray(0.299, 0.587), truncated: what OpenCV's IMREAD_GRAYSCALE gives a PNG."""
    r, g, b = rgb.astype(np.int64).transpose(2, 0, 1)
    return ((9797 * r + 19234 * g + 3737 * b) >> 15).astype(np.uint8)


def make_images(folder: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """One file of each kind in ``folder``; returns each name's RGB pixels (H, W, 3) as decoded."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    pixels = {}

    def rgb(h: int = 5, w: int = 7) -> np.ndarray:
        return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)

    pixels["rgb.png"] = rgb()
    Image.fromarray(pixels["rgb.png"]).save(folder / "rgb.png")
    rgba = np.dstack([rgb(), rng.integers(0, 256, (5, 7), dtype=np.uint8)])
    Image.fromarray(rgba, "RGBA").save(folder / "rgba.png")
    pixels["rgba.png"] = rgba[:, :, :3]  # IMREAD_COLOR drops the alpha, no blending
    gray = rng.integers(0, 256, (5, 7), dtype=np.uint8)
    Image.fromarray(gray, "L").save(folder / "gray.png")
    pixels["gray.png"] = np.dstack([gray] * 3)
    palette = Image.fromarray(rgb()).quantize(16)
    palette.save(folder / "palette.png")
    pixels["palette.png"] = np.asarray(palette.convert("RGB"))
    pixels["image.bmp"] = rgb()
    Image.fromarray(pixels["image.bmp"]).save(folder / "image.bmp")
    pixels["with space.png"] = rgb()
    Image.fromarray(pixels["with space.png"]).save(folder / "with space.png")
    flat = np.full((5, 7, 3), (200, 40, 90), np.uint8)  # one colour: JPEG keeps it within a level or two
    Image.fromarray(flat).save(folder / "photo.jpg", quality=95)
    pixels["photo.jpg"] = flat
    return pixels
