"""A Qt-free signal: a list of callbacks, so the document can be watched without importing Qt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Signal:
    """``connect(cb)``, ``disconnect(cb)``, ``emit(*args)``; callbacks run in connection order."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[..., Any]] = []

    def connect(self, callback: Callable[..., Any]) -> None:
        if callback not in self._callbacks:
            self._callbacks.append(callback)

    def disconnect(self, callback: Callable[..., Any]) -> None:
        self._callbacks.remove(callback)

    def emit(self, *args: Any) -> None:
        # A callback may disconnect itself (or another) while we iterate.
        for callback in list(self._callbacks):
            callback(*args)

    def __len__(self) -> int:
        return len(self._callbacks)
