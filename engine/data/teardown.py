"""Clean shutdown of the data layers: prefetch threads stopped and joined first, sources closed after.

A prefetch thread reads its source (an LMDB cursor, an h5py file, a decoder) while the net runs.
Closing the source under it, or letting the interpreter tear a library down while the thread is
inside it, crashes the process at exit (a segfault in lmdb, a hang on h5py's lock). So every
Prefetcher and every source that holds an open resource registers here, and ``close_all`` (run
by ``atexit``, after the program's own threads have ended and before any library unloads) stops
and joins the threads, then closes the sources. ``Net.close`` does the same for one net.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import weakref
from typing import Protocol


class _Closeable(Protocol):
    def close(self) -> None: ...


_lock = threading.Lock()
_threads: weakref.WeakSet[_Closeable] = weakref.WeakSet()  # Prefetchers
_sources: weakref.WeakSet[_Closeable] = weakref.WeakSet()  # LMDB sources, ...


def track_thread(owner: _Closeable) -> None:
    """Join ``owner`` (whose close() stops and joins its thread) before any source closes at exit."""
    with _lock:
        _threads.add(owner)
    run_first()


def run_first() -> None:
    """Make ``close_all`` the first exit handler again. atexit runs the last registered first, and the
    libraries a source imports lazily register their own: h5py's unregisters its type converters,
    which a prefetch thread still reading an HDF5 file then crashed on (a segfault or a bus error at
    exit, about one pycaffe run in several hundred). A prefetch thread starts after its source's
    library is imported, so re-registering here puts the joins before every such handler."""
    atexit.unregister(close_all)
    atexit.register(close_all)


def track_source(source: _Closeable) -> None:
    """Close ``source`` at exit, once every prefetch thread has stopped."""
    with _lock:
        _sources.add(source)


def close_all() -> None:
    """Stop and join every prefetch thread, then close every source still open."""
    for group in (_threads, _sources):
        with _lock:
            members = list(group)
        for member in members:
            with contextlib.suppress(Exception):  # one failing to close must not keep the others open
                member.close()


atexit.register(close_all)
