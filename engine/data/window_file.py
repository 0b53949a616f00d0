"""WindowData's window file (R-CNN's format), read as Caffe's WindowDataLayer reads it.

The file is a sequence of whitespace-separated records, one per image::

    # IMAGE_INDEX
    IMAGE_PATH
    CHANNELS HEIGHT WIDTH
    NUM_WINDOWS
    LABEL OVERLAP X1 Y1 X2 Y2      (NUM_WINDOWS lines; corners 0-based and inclusive)

A window whose overlap is at least ``fg_threshold`` is foreground (its label must be positive);
one below ``bg_threshold`` is background (label and overlap forced to 0); others are dropped.
A window refers to its image by the IMAGE_INDEX written after ``#`` (an index into the images in
file order, as in Caffe), and ``root_folder`` is glued in front of every path as a string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.data.errors import DataError


@dataclass
class WindowFile:
    images: list[tuple[str, tuple[int, int, int]]] = field(default_factory=list)  # path, (C, H, W)
    # One row per window: image index, label, overlap, x1, y1, x2, y2.
    foreground: np.ndarray = field(default_factory=lambda: np.zeros((0, 7), np.float32))
    background: np.ndarray = field(default_factory=lambda: np.zeros((0, 7), np.float32))
    label_counts: dict[int, int] = field(default_factory=dict)


class _Tokens:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.items = [(m.group(), text.count("\n", 0, m.start()) + 1) for m in re.finditer(r"\S+", text)]
        self.at = 0

    def done(self) -> bool:
        return self.at >= len(self.items)

    def next(self, what: str) -> tuple[str, int]:
        if self.done():
            last = self.items[-1][1] if self.items else 1
            raise DataError(f"{self.path}:{last}: the window file ends where {what} was expected")
        token = self.items[self.at]
        self.at += 1
        return token

    def number(self, what: str, kind: type = int) -> int | float:
        token, line = self.next(what)
        try:
            return kind(token)
        except ValueError:
            raise DataError(f"{self.path}:{line}: expected {what}, got {token!r}") from None


def read_window_file(
    path: Path, fg_threshold: float, bg_threshold: float, root_folder: str = ""
) -> WindowFile:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"Failed to open window file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"the window file {path} is not a text file: {exc}") from exc
    tokens = _Tokens(path, text)
    if tokens.done():
        raise DataError(f"Window file is empty: {path}")
    out = WindowFile(label_counts={0: 0})
    fg_t, bg_t = np.float32(fg_threshold), np.float32(bg_threshold)
    rows: tuple[list[list[float]], list[list[float]]] = ([], [])
    while not tokens.done():
        mark, line = tokens.next("'#'")
        if mark != "#":
            raise DataError(f"{path}:{line}: expected '#' starting an image record, got {mark!r}")
        index = int(tokens.number("the image index"))
        image_path, _ = tokens.next("the image path")
        size = tuple(int(tokens.number(f"the image {what}")) for what in ("channels", "height", "width"))
        out.images.append((root_folder + image_path, (size[0], size[1], size[2])))
        count = int(tokens.number("the number of windows"))
        if count < 0:
            raise DataError(f"{path}:{line}: image {index} has a negative number of windows ({count})")
        for _ in range(count):
            label = int(tokens.number("a window's label"))
            overlap = np.float32(tokens.number("a window's overlap", float))
            x1, y1, x2, y2 = (int(tokens.number("a window corner")) for _ in range(4))
            if overlap >= fg_t:
                if label <= 0:
                    raise DataError(
                        f"{path}: image {index}: a foreground window (overlap {overlap:g}) needs a "
                        f"positive label, got {label}"
                    )
                rows[0].append([index, label, float(overlap), x1, y1, x2, y2])
                out.label_counts[label] = out.label_counts.get(label, 0) + 1
            elif overlap < bg_t:
                rows[1].append([index, 0, 0, x1, y1, x2, y2])
                out.label_counts[0] += 1
    for name, values in zip(("foreground", "background"), rows):
        setattr(out, name, np.array(values, np.float32).reshape(-1, 7))
    used = np.concatenate([out.foreground[:, 0], out.background[:, 0]]).astype(np.int64)
    bad = used[(used < 0) | (used >= len(out.images))]
    if bad.size:
        raise DataError(
            f"{path}: a window refers to image index {int(bad[0])}, but the file lists "
            f"{len(out.images)} images (indices 0..{len(out.images) - 1})"
        )
    return out
