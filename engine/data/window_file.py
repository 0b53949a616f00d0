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

Reading is linear in the file's size (R-CNN's files hold millions of windows): the tokens are
taken line by line, and an image's windows, when they sit one per line as written, are converted
as one block by numpy; only a block that fails is walked token by token, for the error's line.
Numbers must fit Caffe's ``int``: a label, size or corner beyond 32 bits is an error naming its line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.data.errors import DataError
from proto.inputs import read_regular_text

INT_MAX = 2**31 - 1
WINDOW = 6  # tokens per window: label, overlap, x1, y1, x2, y2
SMALL = 16  # fewer windows than this are converted one by one (numpy's set-up would cost more)


@dataclass
class WindowFile:
    images: list[tuple[str, tuple[int, int, int]]] = field(default_factory=list)  # path, (C, H, W)
    # One row per window: image index, label, overlap, x1, y1, x2, y2.
    foreground: np.ndarray = field(default_factory=lambda: np.zeros((0, 7), np.float32))
    background: np.ndarray = field(default_factory=lambda: np.zeros((0, 7), np.float32))
    label_counts: dict[int, int] = field(default_factory=dict)


class _Tokens:
    """The file's tokens in order, each with its line number, read one line at a time."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()
        self.row = 0  # lines[row] is the next line not yet split
        self.pending: list[str] = []  # the rest of line ``row`` (1-based), reversed
        self.last = 1

    def done(self) -> bool:
        while not self.pending:
            if self.row >= len(self.lines):
                return True
            self.pending = self.lines[self.row].split()[::-1]
            self.row += 1
        return False

    def next(self, what: str) -> tuple[str, int]:
        if self.done():
            raise DataError(f"{self.path}:{self.last}: the window file ends where {what} was expected")
        self.last = self.row
        return self.pending.pop(), self.row

    def number(self, what: str, kind: type = int) -> int | float:
        token, line = self.next(what)
        try:
            value = kind(token)
        except ValueError:
            raise DataError(f"{self.path}:{line}: expected {what}, got {token!r}") from None
        if kind is int and not -INT_MAX - 1 <= value <= INT_MAX:
            raise DataError(f"{self.path}:{line}: {what} {token} does not fit in 32 bits")
        return value

    def block(self, count: int) -> np.ndarray | None:
        """``count`` windows as a (count, 6) float64 array when they fill the next ``count`` lines
        and every number converts; None (nothing consumed) otherwise."""
        if self.pending or count == 0:
            return None
        tokens = " ".join(self.lines[self.row : self.row + count]).split()
        if len(tokens) != WINDOW * count:
            return None
        try:  # Python's own int() and float(), mapped at C speed: exact, and as strict as number()
            columns = [
                np.array(list(map(float, tokens[1::WINDOW])), np.float32)
                if column == 1
                else np.array(list(map(int, tokens[column::WINDOW])), np.int64)
                for column in range(WINDOW)
            ]
        except (ValueError, OverflowError):
            return None
        if max(int(np.abs(c).max()) for i, c in enumerate(columns) if i != 1) > INT_MAX:
            return None
        out = np.stack(columns, axis=1).astype(np.float64)
        self.row += count
        self.last = self.row
        return out

    def windows(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The next ``count`` windows (count, 6) and each one's line; by block when it pays."""
        if count >= SMALL:
            first = self.row + 1
            table = self.block(count)
            if table is not None:
                return table, np.arange(first, first + count)
        rows: list[list[float]] = []  # grown as read: a count the file does not hold allocates nothing
        lines: list[int] = []
        for _ in range(count):
            label = self.number("a window's label")
            lines.append(self.last)
            overlap = float(np.float32(self.number("a window's overlap", float)))
            rows.append([label, overlap, *(self.number("a window corner") for _ in range(4))])
        return np.array(rows, np.float64).reshape(-1, WINDOW), np.array(lines, np.int64)


def read_window_file(
    path: Path, fg_threshold: float, bg_threshold: float, root_folder: str = ""
) -> WindowFile:
    try:
        text = read_regular_text(path)
    except OSError as exc:
        raise DataError(f"Failed to open window file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"the window file {path} is not a text file: {exc}") from exc
    tokens = _Tokens(path, text)
    if tokens.done():
        raise DataError(f"Window file is empty: {path}")
    out = WindowFile()
    tables: list[np.ndarray] = []  # per image: (count, 7) rows of index, label, overlap, corners
    lines: list[np.ndarray] = []
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
        table, where = tokens.windows(count)
        tables.append(np.concatenate([np.full((count, 1), index, np.float64), table], axis=1))
        lines.append(where)
    _split(out, path, np.concatenate(tables), np.concatenate(lines), fg_threshold, bg_threshold)
    return out


def _split(
    out: WindowFile, path: Path, rows: np.ndarray, lines: np.ndarray, fg_threshold: float, bg_threshold: float
) -> None:
    """Foreground and background windows (the others dropped), checked, and the label counts."""
    overlap = rows[:, 2].astype(np.float32)
    fg, bg = overlap >= np.float32(fg_threshold), overlap < np.float32(bg_threshold)
    bad = fg & (rows[:, 1] <= 0)
    if bad.any():
        k = int(np.argmax(bad))
        raise DataError(
            f"{path}:{lines[k]}: image {int(rows[k, 0])}: a foreground window (overlap {overlap[k]:g}) "
            f"needs a positive label, got {int(rows[k, 1])}"
        )
    index = rows[fg | bg, 0].astype(np.int64)
    outside = (index < 0) | (index >= len(out.images))
    if outside.any():
        raise DataError(
            f"{path}: a window refers to image index {int(index[np.argmax(outside)])}, but the file lists "
            f"{len(out.images)} images (indices 0..{len(out.images) - 1})"
        )
    out.foreground = rows[fg].astype(np.float32)
    background = rows[bg]
    background[:, 1:3] = 0  # label and overlap
    out.background = background.astype(np.float32)
    labels, counts = np.unique(rows[fg, 1].astype(np.int64), return_counts=True)
    out.label_counts = {0: int(bg.sum()), **dict(zip(labels.tolist(), counts.tolist()))}
