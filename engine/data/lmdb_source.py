"""A Caffe LMDB read record by record, in key order, cycling to the first record at the end.

Records are addressed by a running index (record ``i`` is the ``i % count``-th in key order), so
a reader can ask for any stretch; reading on from where the last read stopped is a cursor step.
lmdb opens a database once per process, so every source (a train and a test net may read the same
one) shares one read-only environment, counted, each with its own transaction and cursor; the
environment closes when its last source is closed or dropped, and at interpreter exit only after
every prefetch thread has been joined (engine.data.teardown). LEVELDB, Caffe's other backend, is not
supported: the error says so and how to convert.

Another process may be writing the database while it is read (``convert_imageset`` still running):
as Caffe, the environment is opened read-only *with* LMDB's reader lock, so the writer never reuses
the pages a reader's transaction still sees (without it, lmdb aborted with ``Assertion
'IS_BRANCH' failed``). Each source's transaction is renewed whenever its cursor wraps to the first
record, so a long training run does not pin the writer's old pages for good, and the records
written since are read in the next pass. A database in a folder nobody may write (no lock file can
be made, and no writer can be at work there) is opened without the lock.
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from engine.data import teardown
from engine.data.errors import DataError
from proto import caffe_pb2

if TYPE_CHECKING:
    import lmdb

_envs: dict[str, list] = {}  # real path -> [environment, number of sources using it]
_envs_lock = threading.RLock()


def _acquire(path: Path) -> tuple[str, lmdb.Environment]:
    import lmdb  # only a net reading an LMDB loads it

    key = os.path.realpath(path)
    with _envs_lock:
        entry = _envs.get(key)
        if entry is None:
            entry = _envs[key] = [_open(lmdb, key, path.is_dir()), 0]
        entry[1] += 1
        return key, entry[0]


def _open(lmdb, key: str, subdir: bool) -> lmdb.Environment:
    path = os.fsencode(key)  # bytes: a name that is not UTF-8 is kept as it is
    try:
        return lmdb.open(path, subdir=subdir, readonly=True, lock=True, readahead=False, max_readers=126)
    except lmdb.Error:
        folder = key if subdir else os.path.dirname(key)
        if os.access(folder, os.W_OK):
            raise  # not a lock file that cannot be made: a real problem, said by the caller
        return lmdb.open(path, subdir=subdir, readonly=True, lock=False, readahead=False, max_readers=126)


def _release(key: str, reader: _Reader) -> None:
    with _envs_lock:
        reader.close()  # a live transaction would keep the environment open behind our back
        entry = _envs.get(key)
        if entry is not None:
            entry[1] -= 1
            if entry[1] == 0:
                del _envs[key]
                entry[0].close()


class _Reader:
    """A source's transaction and cursor, and the index (mod count) of the record under it."""

    def __init__(self) -> None:
        self.txn: lmdb.Transaction | None = None
        self.cursor: lmdb.Cursor | None = None
        self.at = 0

    def close(self) -> None:
        if self.txn is not None:
            self.txn.abort()
        self.txn = self.cursor = None


class LMDBSource:
    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.exists():
            raise DataError(f"cannot open the LMDB {path}: No such file or directory")
        import lmdb

        try:
            key, self._env = _acquire(path)
        except lmdb.Error as exc:
            raise DataError(f"cannot open the LMDB {path}: {exc}") from exc
        self._reader = _Reader()
        self._finalizer = weakref.finalize(self, _release, key, self._reader)
        self._finalizer.atexit = False  # at exit teardown.close_all closes it, after joining the threads
        teardown.track_source(self)
        try:
            self.count = int(self._env.stat()["entries"])
        except lmdb.Error as exc:
            raise DataError(f"cannot read the LMDB {path}: {exc}") from exc
        if self.count == 0:
            raise DataError(f"the LMDB {path} holds no records")

    def read(self, start: int, count: int) -> list[tuple[bytes, bytes]]:
        """(key, value) of records ``start .. start + count - 1``, wrapping around the end."""
        import lmdb

        if not self._finalizer.alive:
            raise DataError(f"the LMDB {self.path} is closed")
        try:
            cursor = self._seek(start % self.count)
            records = []
            for _ in range(count):
                records.append((bytes(cursor.key()), bytes(cursor.value())))
                self._reader.at += 1
                if not cursor.next():
                    cursor = self._renew()
            return records
        except lmdb.Error as exc:
            raise DataError(f"cannot read the LMDB {self.path}: {exc}") from exc

    def _renew(self) -> lmdb.Cursor:
        """A new transaction and cursor at the first record, and the count as of now: the old
        transaction's pages go back to a writer, and records it has added since are read."""
        reader = self._reader
        reader.close()
        reader.txn = self._env.begin(buffers=True)
        reader.cursor = reader.txn.cursor()
        reader.at = 0
        count = int(reader.txn.stat(self._env.open_db())["entries"])
        if count:  # records are only ever added while we read; an emptied database keeps the last count
            self.count = count
        if not reader.cursor.first():
            raise DataError(f"the LMDB {self.path} holds no records any more")
        return reader.cursor

    def _seek(self, index: int) -> lmdb.Cursor:
        reader = self._reader
        if reader.cursor is None or index < reader.at:
            self._renew()
        assert reader.cursor is not None
        while reader.at < index:
            if not reader.cursor.next():  # fewer records than counted: start the pass again
                return self._renew()
            reader.at += 1
        return reader.cursor

    def close(self) -> None:
        """Let go of the database (the source cannot read after this)."""
        self._finalizer()


def open_database(source: str, backend: int, path: Path) -> LMDBSource:
    """The database a DataParameter names (``backend``: DataParameter.DB)."""
    if backend != caffe_pb2.DataParameter.LMDB:
        hint = " (it looks like an LMDB: set 'backend: LMDB')" if (path / "data.mdb").exists() else ""
        raise DataError(
            f"the LEVELDB backend is not supported, only LMDB (source {source}){hint}; "
            "copy its records into an LMDB, key by key (both hold the same Datum values: in Python, "
            "plyvel reads the LevelDB and lmdb writes the LMDB), or make the LMDB afresh (Caffe's "
            "create_*.sh scripts take BACKEND=lmdb)"
        )
    return LMDBSource(path)
