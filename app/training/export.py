"""Runs' curves as one CSV in long form: ``run,series,iteration,seconds,value``.

One row per point keeps runs of different lengths and sparse test outputs in one table that a
spreadsheet or ``pandas.read_csv(...).pivot`` reads directly. Qt-free.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable

from app.training.run import Run
from app.training.series import Smoother
from proto.atomic import atomic_file

HEADER = ("run", "series", "iteration", "seconds", "value")


def curve_rows(run: Run, smoothing: float) -> Iterable[tuple]:
    train = run.train
    it, t = train.column("iter"), train.column("seconds")
    smoothed = Smoother(smoothing).update(train.column("loss"))
    for series, values in (("train loss", train.column("loss")), ("train loss (smoothed)", smoothed)):
        for row in zip(it.tolist(), t.tolist(), values.tolist()):
            yield (run.name, series, int(row[0]), row[1], row[2])
    for row in zip(it.tolist(), t.tolist(), train.column("lr").tolist()):
        yield (run.name, "learning rate", int(row[0]), row[1], row[2])
    for name, test in run.tests.items():
        for row in zip(
            test.column("iter").tolist(), test.column("seconds").tolist(), test.column("value").tolist()
        ):
            yield (run.name, f"test {name}", int(row[0]), row[1], row[2])


def write_csv(path: str | os.PathLike[str], runs: Iterable[Run], smoothing: float) -> int:
    """Write the curves of ``runs`` (atomically, never through a link: proto.atomic); returns the
    number of data rows. WriteError (an OSError, one line) when the file cannot be written."""
    count = 0
    with atomic_file(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        for run in runs:
            for row in curve_rows(run, smoothing):
                writer.writerow((*row[:3], f"{row[3]:.6f}", f"{row[4]:.9g}"))
                count += 1
    return count
