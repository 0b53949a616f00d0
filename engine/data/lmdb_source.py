"""A Caffe LMDB read record by record, in key order, cycling to the first record at the end.

Records are addressed by a running index (record ``i`` is the ``i % count``-th in key order), so
a reader can ask for any stretch; reading on from where the last read stopped is a cursor step.
LEVELDB, Caffe's other backend, is not supported: the error says so and how to convert.
"""

from __future__ import annotations

import os
from pathlib import Path

import lmdb

from engine.data.errors import DataError
from proto import caffe_pb2


class LMDBSource:
    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.exists():
            raise DataError(f"cannot open the LMDB {path}: No such file or directory")
        try:
            self._env = lmdb.open(
                os.fspath(path), subdir=path.is_dir(), readonly=True, lock=False, readahead=False, max_readers=8
            )
            self.count = int(self._env.stat()["entries"])
        except lmdb.Error as exc:
            raise DataError(f"cannot open the LMDB {path}: {exc}") from exc
        if self.count == 0:
            raise DataError(f"the LMDB {path} holds no records")
        self._txn: lmdb.Transaction | None = None
        self._cursor: lmdb.Cursor | None = None
        self._at = 0  # index (mod count) of the record under the cursor

    def read(self, start: int, count: int) -> list[tuple[bytes, bytes]]:
        """(key, value) of records ``start .. start + count - 1``, wrapping around the end."""
        try:
            cursor = self._seek(start % self.count)
            records = []
            for _ in range(count):
                records.append((bytes(cursor.key()), bytes(cursor.value())))
                self._at += 1
                if not cursor.next():
                    cursor.first()
                    self._at = 0
            return records
        except lmdb.Error as exc:
            raise DataError(f"cannot read the LMDB {self.path}: {exc}") from exc

    def _seek(self, index: int) -> lmdb.Cursor:
        if self._cursor is None:
            self._txn = self._env.begin(buffers=True)
            self._cursor = self._txn.cursor()
            self._cursor.first()
            self._at = 0
        if index < self._at:
            self._cursor.first()
            self._at = 0
        while self._at < index:
            self._cursor.next()
            self._at += 1
        return self._cursor

    def close(self) -> None:
        self._cursor = self._txn = None
        self._env.close()


def open_database(source: str, backend: int, path: Path) -> LMDBSource:
    """The database a DataParameter names (``backend``: DataParameter.DB)."""
    if backend != caffe_pb2.DataParameter.LMDB:
        hint = " (it looks like an LMDB: set 'backend: LMDB')" if (path / "data.mdb").exists() else ""
        raise DataError(
            f"the LEVELDB backend is not supported, only LMDB (source {source}){hint}; "
            "convert the database to LMDB (e.g. with Caffe's convert_imageset -backend lmdb)"
        )
    return LMDBSource(path)
