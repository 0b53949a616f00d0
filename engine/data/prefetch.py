"""Batches made ahead of the net on a background thread, as Caffe's BasePrefetchingDataLayer.

``make(i)`` builds batch ``i`` (a tuple of host arrays); the thread calls it for i = start,
start + 1, ... and keeps up to ``depth`` finished batches in a queue. Which records and which random
draws go into batch ``i`` is decided by ``make`` alone, so the order never depends on thread
timing. An exception raised by ``make`` is handed to the consumer by ``next()``, which raises it.

The thread holds only ``make`` and the queue, never the owner: when the Prefetcher is dropped
(its layer and net with it) the thread is told to stop. ``close`` stops it and waits for it, and
every Prefetcher is closed at interpreter exit before any data source is (engine.data.teardown),
so no thread is still reading when a database closes or a library unloads.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

from engine.data import teardown

PREFETCH_COUNT = 4  # Caffe's default DataParameter.prefetch
_POLL_S = 0.05


class Prefetcher:
    def __init__(self, make: Callable[[int], Any], depth: int = PREFETCH_COUNT, start: int = 0) -> None:
        self._queue: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=_produce, args=(make, start, self._queue, self._stop), name="data-prefetch", daemon=True
        )
        self._error: BaseException | None = None
        self._finalizer = weakref.finalize(self, self._stop.set)
        self._finalizer.atexit = False  # teardown.close_all joins the thread at exit instead
        teardown.track_thread(self)
        self._thread.start()

    def next(self) -> Any:
        """The next batch, waiting for it if the thread has not made it yet."""
        if self._error is not None:  # the thread stopped at this error; every later call sees it too
            raise self._error
        while True:
            try:
                ok, value = self._queue.get(timeout=_POLL_S)
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    raise RuntimeError("the data prefetch thread has stopped") from None
                continue
            if not ok:
                self._error = value
                raise value
            return value

    def close(self) -> None:
        """Stop the thread and wait for it (it finishes the batch it is making)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()


def _produce(
    make: Callable[[int], Any], index: int, out: queue.Queue[tuple[bool, Any]], stop: threading.Event
) -> None:
    while not stop.is_set():
        try:
            item: tuple[bool, Any] = (True, make(index))
        except BaseException as exc:
            item = (False, exc)
        while not stop.is_set():
            try:
                out.put(item, timeout=_POLL_S)
                break
            except queue.Full:
                continue
        if not item[0]:
            return
        index += 1
