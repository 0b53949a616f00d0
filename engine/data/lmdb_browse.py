"""An LMDB of Datums looked at rather than trained on: its records' labels and shape in one pass,
then any records by index (a page of thumbnails), decoded as the Data layer decodes them.

Reads through LMDBSource, so a view and a training run in the same process share one environment.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import numpy as np

from engine.data.datum import datum_to_array, parse_datum
from engine.data.lmdb_source import LMDBSource

CHUNK = 512


class Labelled:
    """Records with a label each (``labels``): how many, per label, and which."""

    labels: np.ndarray  # record i's label

    @property
    def count(self) -> int:
        return len(self.labels)

    def counts(self) -> dict[int, int]:
        """Records per label, by label."""
        return dict(sorted(Counter(self.labels.tolist()).items()))

    def indices_of(self, label: int) -> np.ndarray:
        return np.flatnonzero(self.labels == label)


@dataclasses.dataclass
class LMDBSummary(Labelled):
    path: Path
    labels: np.ndarray  # record i's label
    shape: tuple[int, ...]  # the first record's (C, H, W)
    encoded: bool


def summarize(path: Path) -> LMDBSummary:
    """One pass over the records (labels only; the first record decoded for its shape)."""
    source = LMDBSource(path)
    try:
        labels = np.empty(source.count, np.int64)
        shape: tuple[int, ...] = ()
        encoded = False
        for start in range(0, source.count, CHUNK):
            for k, (key, value) in enumerate(source.read(start, min(CHUNK, source.count - start))):
                datum = parse_datum(value, f"{path} record {key!r}")
                labels[start + k] = datum.label
                if start + k == 0:
                    encoded = datum.encoded
                    shape = datum_to_array(datum, f"{path} record {key!r}", lambda: None).shape
        return LMDBSummary(path, labels, shape, encoded)
    finally:
        source.close()


def read_records(path: Path, indices: list[int]) -> list[tuple[np.ndarray, int]]:
    """Records ``indices`` (any order) as (image (C, H, W), label), in the order asked."""
    source = LMDBSource(path)
    try:
        found = {}
        for index in sorted(set(indices)):  # ascending: the cursor only steps forward
            ((key, value),) = source.read(index, 1)
            datum = parse_datum(value, f"{path} record {key!r}")
            found[index] = (datum_to_array(datum, f"{path} record {key!r}", lambda: None), int(datum.label))
        return [found[i] for i in indices]
    finally:
        source.close()
