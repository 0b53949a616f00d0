"""pycaffe's Timer."""

from __future__ import annotations

import time

from engine import backend


class Timer:
    """pycaffe's Timer: ``start()``, ``stop()`` and ``ms``, the milliseconds from start to stop.

    Starting a running timer or stopping a stopped one does nothing; reading ``ms`` stops a running
    one; a timer never started reads 0. In GPU mode the device is synchronised at start and stop,
    so queued kernels count where they were launched.
    """

    def __init__(self) -> None:
        self._running = False
        self._started = 0.0
        self._stopped = 0.0
        self._ever_ran = False

    def start(self) -> None:
        if not self._running:
            backend.synchronize()
            self._started = time.perf_counter()
            self._running = True
            self._ever_ran = True

    def stop(self) -> None:
        if self._running:
            backend.synchronize()
            self._stopped = time.perf_counter()
            self._running = False

    @property
    def ms(self) -> float:
        if not self._ever_ran:
            return 0.0
        self.stop()
        return (self._stopped - self._started) * 1000.0
