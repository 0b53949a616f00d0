"""HDF5Data's files: a list of ``.h5`` files whose datasets are named by the layer's tops.

As Caffe: the list holds whitespace-separated file names (a relative one is looked for in the
working directory, then beside the list, then under the data root); rows are served file after
file, a whole file is held in memory while it is read, and with ``shuffle`` the file order is
redrawn every pass and the rows of each file every time it is loaded (files are never mixed).
Record ``i`` of the stream is found by arithmetic on the files' row counts, each permutation drawn
from (seed, pass, file slot), so any record can be found again without replaying the ones before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.data.errors import DataError
from engine.data.paths import DEFAULT, DataPaths
from proto.inputs import check_regular, read_regular_text

if TYPE_CHECKING:
    import h5py


def read_file_list(path: Path, data_paths: DataPaths = DEFAULT) -> list[Path]:
    try:
        names = read_regular_text(path).split()
    except OSError as exc:
        raise DataError(f"Failed to open source file: {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"the HDF5 file list {path} is not a text file: {exc}") from exc
    if not names:
        raise DataError(f"Must have at least 1 HDF5 filename listed in {path}")
    return [data_paths.resolve(name, also=[path.parent]) for name in names]


class HDF5Files:
    def __init__(
        self, files: list[Path], datasets: list[str], shuffle: bool, seed: int, dtype: np.dtype
    ) -> None:
        self.files = files
        self.datasets = datasets
        self.shuffle = shuffle
        self.seed = seed
        self.dtype = dtype
        self.rows = np.array([self._probe(f) for f in files], np.int64)
        self.total = int(self.rows.sum())
        self.row_shapes = self._row_shapes()
        self._loaded: tuple[int, int, list[np.ndarray], np.ndarray] | None = (
            None  # pass, slot, data, row order
        )

    def _probe(self, path: Path) -> int:
        """Rows of one file, checking that every top's dataset is there with as many rows."""
        with self._open(path) as f:
            shapes = [self._dataset(f, path, name).shape for name in self.datasets]
        if any(len(s) == 0 for s in shapes):
            raise DataError(f"{path}: every dataset needs at least 1 axis (the rows)")
        if len({s[0] for s in shapes}) > 1:
            raise DataError(f"{path}: the datasets {self.datasets} have different numbers of rows {shapes}")
        if shapes[0][0] == 0:
            raise DataError(f"{path}: the datasets hold no rows")
        return shapes[0][0]

    def _row_shapes(self) -> list[tuple[int, ...]]:
        """The shape of one row of each dataset, from the first file (every file must match)."""
        with self._open(self.files[0]) as f:
            return [tuple(self._dataset(f, self.files[0], n).shape[1:]) for n in self.datasets]

    def read(self, start: int, count: int) -> list[np.ndarray]:
        """One array per dataset holding rows ``start .. start + count - 1`` of the stream."""
        parts: list[list[np.ndarray]] = [[] for _ in self.datasets]
        position = start
        while position < start + count:
            pass_index, offset = divmod(position, self.total)
            order = self._file_order(pass_index)
            ends = np.cumsum(self.rows[order])
            slot = int(np.searchsorted(ends, offset, side="right"))
            row = offset - (int(ends[slot - 1]) if slot else 0)
            data, rows = self._load(pass_index, slot, int(order[slot]))
            take = rows[row : row + min(start + count - position, len(rows) - row)]
            for part, values in zip(parts, data):
                part.append(values[take])
            position += len(take)
        return [np.concatenate(p) if len(p) > 1 else p[0] for p in parts]

    def _file_order(self, pass_index: int) -> np.ndarray:
        if not self.shuffle:
            return np.arange(len(self.files))
        return np.random.default_rng([self.seed, 0, pass_index]).permutation(len(self.files))

    def _load(self, pass_index: int, slot: int, file_index: int) -> tuple[list[np.ndarray], np.ndarray]:
        if self._loaded is None or self._loaded[:2] != (pass_index, slot):
            path = self.files[file_index]
            with self._open(path) as f:
                data = [np.asarray(self._dataset(f, path, n)[()], self.dtype) for n in self.datasets]
            if [d.shape[1:] for d in data] != self.row_shapes:
                shapes = [d.shape[1:] for d in data]
                raise DataError(f"{path}: rows of shape {shapes}, the first file's are {self.row_shapes}")
            rows = np.arange(len(data[0]))
            if self.shuffle:
                rows = np.random.default_rng([self.seed, 1, pass_index, slot]).permutation(len(rows))
            self._loaded = (pass_index, slot, data, rows)
        return self._loaded[2], self._loaded[3]

    @staticmethod
    def _open(path: Path) -> h5py.File:
        import h5py  # only an HDF5 source loads it

        try:
            check_regular(path)
            return h5py.File(os.fspath(path), "r")
        except (OSError, ValueError) as exc:
            raise DataError(f"Failed opening HDF5 file: {path}: {exc}") from exc

    @staticmethod
    def _dataset(f: h5py.File, path: Path, name: str) -> h5py.Dataset:
        import h5py

        item = f.get(name)
        if not isinstance(item, h5py.Dataset):
            raise DataError(f"Failed to find HDF5 dataset {name} in {path}")
        if item.dtype.kind not in "biuf":
            raise DataError(f"{path}: dataset {name} is of type {item.dtype}, not numbers")
        return item
