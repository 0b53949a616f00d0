"""The labelled data an evaluation reads, as batches of (names, C x H x W uint8 items, labels),
decoded as Caffe's data layers decode them. Qt-free.

* an LMDB of Datums (each record's key is its name);
* an image list (``path label`` lines, as convert_imageset and ImageData read them);
* a folder of class folders (the sorted folder names are the classes, as DIGITS makes a data set);
* the TEST data layer of a train_val net (its Data LMDB or its ImageData list).

Images are resized to ``size`` (H, W) with OpenCV's bilinear rule (engine/data/images.py); one that
does not decode is reported through ``warn`` and skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.data.datum import datum_to_array, parse_datum
from engine.data.errors import DataError
from engine.data.images import read_image, resize_bilinear
from engine.data.lmdb_source import LMDBSource
from engine.model_use import inputs

Batch = tuple[list[str], list[np.ndarray], np.ndarray]


@dataclass
class LMDBData:
    path: Path
    count: int = 0
    class_names: list[str] | None = None

    def __post_init__(self) -> None:
        source = LMDBSource(self.path)
        self.count = source.count
        source.close()

    def describe(self) -> str:
        return f"the LMDB {self.path} ({self.count} records)"

    def fetch(self, index: int, name: str) -> np.ndarray:
        """Item ``index`` of the evaluation (its record's place in key order), as C x H x W uint8."""
        source = LMDBSource(self.path)
        try:
            key, value = source.read(index, 1)[0]
            where = f"{self.path} record {key.decode(errors='replace')}"
            return np.asarray(datum_to_array(parse_datum(value, where), where, lambda: None))
        finally:
            source.close()

    def batches(self, size: int, warn: Callable[[str], None]) -> Iterator[Batch]:
        source = LMDBSource(self.path)
        try:
            for start in range(0, self.count, size):
                records = source.read(start, min(size, self.count - start))
                names, items, labels = [], [], []
                for key, value in records:
                    name = key.decode(errors="replace")
                    datum = parse_datum(value, f"{self.path} record {name}")
                    names.append(name)
                    items.append(datum_to_array(datum, f"{self.path} record {name}", lambda: None))
                    labels.append(datum.label)
                yield names, items, np.asarray(labels, np.int64)
        finally:
            source.close()


@dataclass
class ImageData:
    items: list[inputs.Item]
    channels: int
    size: tuple[int, int] | None  # (H, W) every image is resized to; None: kept as it is
    what: str
    class_names: list[str] | None = None
    count: int = field(init=False)

    def __post_init__(self) -> None:
        self.count = len(self.items)

    def describe(self) -> str:
        return f"{self.what} ({self.count} images)"

    def fetch(self, index: int, name: str) -> np.ndarray:
        """The image ``name`` as C x H x W uint8 (as read, not resized)."""
        return read_image(name, "gray" if self.channels == 1 else "color")

    def batches(self, size: int, warn: Callable[[str], None]) -> Iterator[Batch]:
        for start in range(0, self.count, size):
            names, pictures, labels = [], [], []
            for item in self.items[start : start + size]:
                try:
                    picture = read_image(item.path, "gray" if self.channels == 1 else "color")
                except DataError as exc:
                    warn(str(exc))
                    continue
                if self.size is not None:
                    picture = resize_bilinear(picture, *self.size)
                names.append(item.path)
                pictures.append(picture)
                labels.append(item.label)
            yield names, pictures, np.asarray(labels, np.int64)


def image_list(path: Path, channels: int, size: tuple[int, int] | None, root: str = "") -> ImageData:
    """Caffe's image list: ``path label`` lines, each path ``root + path`` (else found as
    inputs.read_list finds it)."""
    items = inputs.read_list(path, root or None)
    unlabelled = [i.path for i in items if i.label is None]
    if unlabelled:
        raise DataError(f"{path}: '{unlabelled[0]}' has no label (lines are 'path label')")
    return ImageData(items, channels, size, f"the image list {path}")


def class_folders(
    folder: Path, channels: int, size: tuple[int, int] | None, names: Sequence[str] | None
) -> ImageData:
    """A folder of class folders; with ``names`` (a labels file) each folder is the class of its name."""
    subfolders = sorted(p for p in folder.iterdir() if p.is_dir())
    if not subfolders:
        raise DataError(f"{folder}: no class folders in it")
    classes = [p.name for p in subfolders]
    if names is not None:
        unknown = [c for c in classes if c not in names]
        if unknown:
            raise DataError(f"{folder}: the class folder '{unknown[0]}' is not in the labels file")
    items = []
    for index, sub in enumerate(subfolders):
        label = list(names).index(sub.name) if names is not None else index
        items += [inputs.Item(str(p), label) for p in inputs.folder_images(sub)]
    if not items:
        raise DataError(f"{folder}: the class folders hold no images")
    return ImageData(items, channels, size, f"the class folders of {folder}", None if names else classes)


def open_data(
    path: str, channels: int, size: tuple[int, int] | None, names: Sequence[str] | None
) -> LMDBData | ImageData:
    """An LMDB (a folder holding data.mdb), a folder of class folders, or an image list."""
    where = Path(path)
    if not where.exists():
        raise DataError(f"{path}: no such file or folder")
    if where.is_dir() and (where / "data.mdb").exists():
        return LMDBData(where)
    if where.is_dir():
        return class_folders(where, channels, size, names)
    return image_list(where, channels, size)
