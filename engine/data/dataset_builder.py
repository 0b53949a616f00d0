"""Write a planned data set (engine/data/dataset_plan.py) into a folder, as DIGITS lays one out:
``train_lmdb``, ``val_lmdb``, ``test_lmdb`` (splits with images only), ``mean.binaryproto`` (of the
training images, as compute_image_mean makes it), ``labels.txt`` (line i names class i),
``train.txt``/``val.txt``/``test.txt`` (``path label``, the images used), and ``dataset.json``
(counts per class and split, size, channels, what was skipped and why).

Images are read, converted and serialised on worker threads (Pillow and numpy let go of the GIL
for the heavy parts), a few batches ahead of the one thread that writes, so memory stays flat. All
is written under a temporary name beside OUT_DIR and renamed at the end: a failure, a Cancel or
Ctrl+C leaves nothing, and an existing OUT_DIR is replaced only with ``force``.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from engine.data.dataset_plan import DatasetPlan
from engine.data.errors import DataError
from engine.data.image_encode import encode_image
from engine.data.image_mean import MeanAccumulator
from engine.data.images import decode_image, read_image
from engine.data.lmdb_writer import LMDBWriter
from engine.data.resize_modes import resize_to
from engine.data.staging import staged_folder
from proto import caffe_pb2

BATCH = 64
AHEAD = 4  # batches in flight per worker


class Cancelled(DataError):
    """The run was cancelled; nothing was left behind."""


Progress = Callable[[int, int], None]  # (images done, images in all)


def build_dataset(
    plan: DatasetPlan,
    out_dir: Path,
    force: bool = False,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    workers: int | None = None,
) -> dict:
    """Write the data set; returns what dataset.json holds."""
    report = progress or (lambda done, total: None)
    stop = cancelled or (lambda: False)
    workers = workers or min(2, os.cpu_count() or 1)
    summary: dict = {
        "folder": os.fspath(plan.folder), "size": list(plan.size), "channels": plan.channels,
        "resize": plan.options.resize, "encoding": plan.options.encoding, "seed": plan.options.seed,
        "labels": plan.labels, "counts": {}, "skipped": [],
        "dropped_classes": {name: f"{n} image(s), under --min-per-class" for name, n in plan.dropped.items()},
    }  # fmt: skip
    done = 0
    with (
        staged_folder(out_dir, force, "the data set folder") as tmp,
        concurrent.futures.ThreadPoolExecutor(workers) as pool,
    ):
        mean = MeanAccumulator()
        for name, items in plan.splits.items():
            if not items:
                continue
            counts = [0] * len(plan.labels)
            lines = []
            with LMDBWriter(tmp / f"{name}_lmdb", new=True) as db:
                for index, (path, label), result in _converted(pool, plan, items, workers):
                    if stop():
                        raise Cancelled("cancelled")
                    done += 1
                    if isinstance(result, str):
                        summary["skipped"].append({"path": os.fspath(path), "reason": result})
                    else:
                        value, pixels = result
                        db.put(
                            b"%08d_" % index + _relative(path, plan).encode("utf-8", "surrogateescape"), value
                        )
                        counts[label] += 1
                        lines.append(f"{path} {label}\n")
                        if name == "train":
                            mean.add(pixels)
                    if done % BATCH == 0 or done == plan.total:
                        report(done, plan.total)
            if not lines:
                first = summary["skipped"][0]["reason"] if summary["skipped"] else "?"
                raise DataError(f"no image of the {name} split could be read (the first: {first})")
            (tmp / f"{name}.txt").write_text("".join(lines), "utf-8", errors="surrogateescape")
            summary["counts"][name] = dict(zip(plan.labels, counts))
        _write_blob(tmp / "mean.binaryproto", mean.blob())
        (tmp / "labels.txt").write_text(  # a non-UTF-8 folder name keeps its bytes
            "".join(f"{label}\n" for label in plan.labels), "utf-8", errors="surrogateescape"
        )
        (tmp / "dataset.json").write_text(json.dumps(summary, indent=1) + "\n", "utf-8")
        report(plan.total, plan.total)
    return summary


def _relative(path: Path, plan: DatasetPlan) -> str:
    for root in (plan.folder, plan.options.val_folder):
        if root is not None:
            try:
                return path.relative_to(root).as_posix()
            except ValueError:
                continue
    return path.name


def _write_blob(path: Path, blob: caffe_pb2.BlobProto) -> None:
    path.write_bytes(blob.SerializeToString())  # inside the staged folder: renamed whole at the end


def _converted(
    pool: concurrent.futures.Executor, plan: DatasetPlan, items: list[tuple[Path, int]], workers: int
) -> Iterator[tuple[int, tuple[Path, int], tuple[bytes, np.ndarray] | str]]:
    """Each item with its serialised Datum and pixels (or why it was skipped), in order."""
    pending: collections.deque = collections.deque()
    starts = iter(range(0, len(items), BATCH))
    for start in starts:
        pending.append((start, pool.submit(_convert_batch, plan, items[start : start + BATCH], start)))
        if len(pending) >= workers * AHEAD:
            break
    while pending:
        start, future = pending.popleft()
        for offset, result in enumerate(future.result()):
            yield start + offset, items[start + offset], result
        nxt = next(starts, None)
        if nxt is not None:
            pending.append((nxt, pool.submit(_convert_batch, plan, items[nxt : nxt + BATCH], nxt)))


def _convert_batch(
    plan: DatasetPlan, items: list[tuple[Path, int]], start: int
) -> list[tuple[bytes, np.ndarray] | str]:
    return [_convert(plan, path, label, start + k) for k, (path, label) in enumerate(items)]


def _convert(plan: DatasetPlan, path: Path, label: int, index: int) -> tuple[bytes, np.ndarray] | str:
    options = plan.options
    try:
        pixels = read_image(path, "gray" if options.gray else "color")
    except DataError as exc:
        return str(exc)
    noisy = options.resize in ("fill", "half_crop")  # the noise the same on every run
    rng = np.random.default_rng([options.seed, index]) if noisy else None
    pixels = np.ascontiguousarray(resize_to(pixels, *plan.size, options.resize, rng))
    channels, height, width = pixels.shape
    datum = caffe_pb2.Datum(channels=channels, height=height, width=width, label=label)
    if options.encoding == "none":
        datum.data = pixels.tobytes()
        datum.encoded = False
    else:
        datum.data = encode_image(pixels, options.encoding)
        datum.encoded = True
        if options.encoding == "jpg":  # the mean of what a reader will decode
            pixels = decode_image(datum.data, None, os.fspath(path))
    return datum.SerializeToString(), pixels
