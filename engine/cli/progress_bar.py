"""A one-line progress bar on the terminal: done/total, percent, rate and time left.

On a terminal the line is redrawn in place (at most ~10 times a second); elsewhere (a log file) a
line is printed every 10%.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    def __init__(self, what: str, unit: str = "img", stream: TextIO | None = None) -> None:
        self.what, self.unit = what, unit
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self._last_draw = 0.0
        self._last_tenth = -1
        self._tty = self.stream.isatty()
        self._finished = False

    def __call__(self, done: int, total: int) -> None:
        if self._finished:
            return
        self._finished = done >= total
        now = time.monotonic()
        tenth = done * 10 // max(total, 1)
        if self._tty and now - self._last_draw < 0.1 and done < total:
            return
        if not self._tty and tenth == self._last_tenth and done < total:
            return
        self._last_draw, self._last_tenth = now, tenth
        end = "\n" if not self._tty or done >= total else ""
        print(
            ("\r" if self._tty else "") + self.line(done, total, now), end=end, file=self.stream, flush=True
        )

    def line(self, done: int, total: int, now: float) -> str:
        elapsed = max(now - self.start, 1e-6)
        rate = done / elapsed
        left = (total - done) / rate if rate > 0 else 0.0
        width = 24
        filled = width * done // max(total, 1)
        bar = "#" * filled + "-" * (width - filled)
        return (
            f"{self.what} [{bar}] {done}/{total} {100 * done / max(total, 1):3.0f}% "
            f"{rate:.0f} {self.unit}/s, {_duration(left)} left"
        )


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
