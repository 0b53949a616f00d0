"""What ``main.py dataset`` (and File > New Dataset from Images...) will write, decided before a
byte is written: the classes and their counts, the split, the image size and channels."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine.data.class_folders import SPLITS, ClassFolders, scan, split
from engine.data.errors import DataError
from engine.data.images import MAX_PIXELS
from engine.data.resize_modes import MODES

ENCODINGS = ("none", "png", "jpg")


@dataclasses.dataclass(frozen=True)
class DatasetOptions:
    size: tuple[int, int] | None = None  # (height, width); None: the first image's
    resize: str = "squash"
    gray: bool = False
    val_pct: float = 25.0
    test_pct: float = 0.0
    val_folder: Path | None = None
    min_per_class: int = 2
    max_per_class: int = 0
    encoding: str = "none"
    seed: int = 0


@dataclasses.dataclass
class DatasetPlan:
    folder: Path
    options: DatasetOptions
    labels: list[str]
    splits: dict[str, list[tuple[Path, int]]]
    size: tuple[int, int]
    dropped: dict[str, int]

    @property
    def channels(self) -> int:
        return 1 if self.options.gray else 3

    def counts(self) -> dict[str, list[int]]:
        """Images per class (in label order) of each split."""
        out = {}
        for name in SPLITS:
            per_class = [0] * len(self.labels)
            for _, label in self.splits[name]:
                per_class[label] += 1
            out[name] = per_class
        return out

    @property
    def total(self) -> int:
        return sum(len(items) for items in self.splits.values())


def plan_dataset(folder: Path, options: DatasetOptions, scanned: ClassFolders | None = None) -> DatasetPlan:
    """The plan for ``folder``; ``scanned``, a scan of it made before (``scan(folder, 1)``), saves
    walking it again when only the options changed (the dialog re-plans on every change)."""
    if options.resize not in MODES:
        raise DataError(f"unknown resize mode {options.resize!r} (known: {', '.join(MODES)})")
    if options.encoding not in ENCODINGS:
        raise DataError(f"unknown encoding {options.encoding!r} (known: {', '.join(ENCODINGS)})")
    if options.min_per_class < 1 or options.max_per_class < 0:
        raise DataError("--min-per-class must be at least 1 and --max-per-class at least 0")
    if options.seed < 0:
        raise DataError(f"--seed {options.seed}: expected 0 or more")
    if options.size is not None:
        _check_size(*options.size)
    classes = _keep_big_enough(scanned or scan(folder, 1), options.min_per_class)
    labels = list(classes.classes)
    with_val = options.val_folder is None
    splits = split(classes, options.val_pct if with_val else 0, options.test_pct, options.max_per_class,
                   options.seed, with_val)  # fmt: skip
    if options.val_folder is not None:
        splits["val"] = _from_val_folder(options.val_folder, labels, options.seed)
    if not splits["train"]:
        raise DataError(f"{folder}: no images left for training after the validation and test shares")
    size = options.size or _first_image_size(classes)
    _check_size(*size)
    return DatasetPlan(folder, options, labels, splits, size, classes.dropped)


def _check_size(height: int, width: int) -> None:
    if height < 1 or width < 1 or height * width > MAX_PIXELS:
        raise DataError(f"--size {height}x{width}: expected 1 to {MAX_PIXELS:,} pixels (8192x8192) per image")


def _keep_big_enough(scanned: ClassFolders, minimum: int) -> ClassFolders:
    classes = {name: images for name, images in scanned.classes.items() if len(images) >= minimum}
    dropped = {**scanned.dropped, **{n: len(i) for n, i in scanned.classes.items() if len(i) < minimum}}
    if not classes:
        raise DataError(f"{scanned.root}: no class subfolder with enough images (--min-per-class {minimum})")
    return ClassFolders(scanned.root, classes, dropped)


def _from_val_folder(folder: Path, labels: list[str], seed: int) -> list[tuple[Path, int]]:
    import numpy as np

    classes = scan(folder, 1)
    unknown = sorted(set(classes.classes) - set(labels))
    if unknown:
        raise DataError(f"{folder}: class folders the training folder lacks: {', '.join(unknown)}")
    items = [(p, labels.index(name)) for name, images in classes.classes.items() for p in images]
    return [items[i] for i in np.random.default_rng([seed, 1]).permutation(len(items))]


def _first_image_size(classes: ClassFolders) -> tuple[int, int]:
    """The size of the first image that opens (its header only)."""
    from PIL import Image

    for images in classes.classes.values():
        for path in images:
            try:
                with Image.open(path) as image:
                    if 0 < image.width * image.height <= MAX_PIXELS:  # not a decompression bomb
                        return image.height, image.width
            except (OSError, ValueError, Image.DecompressionBombError):
                continue
    raise DataError(f"{classes.root}: none of the images opens")


def replace_problem(out: Path, source: Path, hint: str = ": choose another name.") -> str:
    """Why the existing ``out`` may not be replaced ("" when it may: an empty folder, or one that
    holds a data set made here, its dataset.json, and does not hold the images)."""
    if out.is_symlink() or not out.is_dir():
        return f"{out} already exists and is not a folder{hint}"
    try:
        entries = [p.name for p in out.iterdir()]
        inside = source.resolve().is_relative_to(out.resolve())
    except OSError as exc:
        return f"cannot read {out}: {exc.strerror or exc}"
    if inside:
        return f"{out} holds the images{hint}"
    if entries and "dataset.json" not in entries:
        return f"{out} already exists and is not a data set{hint}"
    return ""
