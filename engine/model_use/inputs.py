"""The images a command is given: image files, folders of them, and lists. Qt-free.

A folder gives its image files (by extension), in sorted order, its sub-folders' too; a file whose
extension is not an image's is a list: one image a line, optionally followed by a label as in
Caffe's image lists (``path label``); a relative path is looked for from the working directory,
then beside the list. Images are decoded as Caffe's data layers decode them (engine/data/images.py)
and handed on as pycaffe's loader gives them: H x W x K float32 in [0, 1], colour in RGB order.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.data.errors import DataError
from engine.data.images import read_image
from proto.inputs import read_regular_text

IMAGE_EXTENSIONS = frozenset(
    {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm", ".pbm", ".pnm"}
)


@dataclass(frozen=True)
class Item:
    path: str
    label: int | None = None


def is_image_file(path: str | os.PathLike[str]) -> bool:
    return Path(path).suffix.lower() in IMAGE_EXTENSIONS


def gather(arguments: Iterable[str]) -> list[Item]:
    """Every image the arguments name, in order; a missing argument is a DataError."""
    items: list[Item] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = folder_images(path)
            if not found:
                raise DataError(
                    f"{argument}: the folder holds no image ({', '.join(sorted(IMAGE_EXTENSIONS))})"
                )
            items += [Item(str(p)) for p in found]
        elif not path.exists():
            raise DataError(f"{argument}: no such file or folder")
        elif is_image_file(path):
            items.append(Item(argument))
        else:
            items += read_list(path)
    return items


def folder_images(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and is_image_file(p))


def read_list(path: Path, root: str | None = None) -> list[Item]:
    """``path [label]`` lines; blank lines and ``#`` comments are skipped. With ``root`` each path is
    ``root + path``, as ImageData's root_folder is prepended."""
    try:  # a FIFO or a device is refused, not read forever
        text = read_regular_text(path)
    except OSError as exc:
        raise DataError(f"{path}: cannot read the list: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}: cannot read the list: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from exc
    items = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, label = line, None
        head, _, tail = line.rpartition(" ")
        if head and tail.lstrip("-").isdigit():
            name, label = head.strip(), int(tail)
        where = Path(root + name if root is not None else name)
        if root is None and not where.is_absolute() and not where.exists() and (path.parent / where).exists():
            where = path.parent / where
        items.append(Item(str(where), label))
    if not items:
        raise DataError(f"{path}: the list names no image")
    return items


def load(path: str, channels: int) -> np.ndarray:
    """The image as pycaffe's ``load_image`` gives it: H x W x 3 RGB (or H x W x 1 for a
    one-channel net) float32 in [0, 1]; a file that cannot be read or decoded is a DataError."""
    pixels = read_image(path, "gray" if channels == 1 else "color")  # C, H, W uint8, BGR
    image = pixels.transpose(1, 2, 0)
    if channels != 1:
        image = image[:, :, ::-1]
    return (image / 255.0).astype(np.float32)  # as pycaffe's load_image divides


def decoded(items: Iterable[Item], channels: int) -> Iterator[tuple[Item, np.ndarray | DataError]]:
    """Each item with its image, or the error that names it (the caller says it and goes on)."""
    for item in items:
        try:
            yield item, load(item.path, channels)
        except DataError as exc:
            yield item, exc
