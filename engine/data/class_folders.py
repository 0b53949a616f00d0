"""A folder of class subfolders, as DIGITS reads one: classes, their images, the split.

Each subfolder of the root (sorted by name) is a class; its images are found recursively (.png
.jpg .jpeg .bmp .ppm, any case) and sorted, so a seed gives the same data set on any machine. A
class with fewer than ``min_per_class`` images is dropped (and said so); ``max_per_class`` keeps
that many of each, drawn by the seed. Each class is split on its own (stratified): the test share
first, then the validation share, the rest for training; each split is then shuffled as a whole so
that a Data layer reading in key order sees the classes mixed.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from engine.data.errors import DataError

EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".ppm")
SPLITS = ("train", "val", "test")


@dataclasses.dataclass
class ClassFolders:
    root: Path
    classes: dict[str, list[Path]]  # class name -> its images, sorted
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)  # class -> images it had


def scan(root: Path, min_per_class: int = 1) -> ClassFolders:
    """The classes under ``root``; a DataError when it holds no class subfolder with images."""
    if not root.is_dir():
        raise DataError(f"{root}: no such folder")
    try:
        subfolders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as exc:
        raise DataError(f"cannot read the folder {root}: {exc.strerror or exc}") from exc
    classes, dropped = {}, {}
    for folder in subfolders:
        images = find_images(folder)
        if len(images) >= max(1, min_per_class):
            classes[folder.name] = images
        else:
            dropped[folder.name] = len(images)
    if not classes:
        what = "no class subfolders" if not subfolders else "no class subfolder with enough images"
        kinds = "/".join(e[1:] for e in EXTENSIONS)
        raise DataError(f"{root}: {what} (expected one subfolder of {kinds} images per class)")
    return ClassFolders(root, classes, dropped)


def find_images(folder: Path) -> list[Path]:
    found = []
    for parent, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(parent) / f for f in files if os.path.splitext(f)[1].lower() in EXTENSIONS]
    return sorted(found)


def split(
    folders: ClassFolders,
    val_pct: float,
    test_pct: float,
    max_per_class: int,
    seed: int,
    with_val: bool = True,
) -> dict[str, list[tuple[Path, int]]]:
    """(image, label) per split, label = the class's index in sorted order."""
    if not (0 <= val_pct <= 100 and 0 <= test_pct <= 100 and val_pct + test_pct < 100):
        raise DataError(f"--val {val_pct} and --test {test_pct}: each 0..100, and together under 100")
    rng = np.random.default_rng(seed)
    out: dict[str, list[tuple[Path, int]]] = {name: [] for name in SPLITS}
    for label, images in enumerate(folders.classes.values()):
        order = rng.permutation(len(images))
        if max_per_class > 0:
            order = order[:max_per_class]
        n = len(order)
        n_test = int(round(n * test_pct / 100))
        n_val = int(round(n * val_pct / 100)) if with_val else 0
        chosen = [images[i] for i in order]
        out["test"] += [(p, label) for p in chosen[:n_test]]
        out["val"] += [(p, label) for p in chosen[n_test : n_test + n_val]]
        out["train"] += [(p, label) for p in chosen[n_test + n_val :]]
    for name in SPLITS:
        out[name] = [out[name][i] for i in rng.permutation(len(out[name]))]
    return out
