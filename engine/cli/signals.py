"""Caffe's SignalHandler for `train`: SIGINT and SIGHUP become solver actions between iterations.

Each signal only raises a flag (Ctrl-C never kills a run mid-update); the solver polls the action
after every iteration and before every test batch. A pending SIGHUP is answered before a pending
SIGINT, each flag is cleared once answered, and 'none' swallows the signal, all as in Caffe.
``compare-init`` uses it too, without SIGHUP (nothing to snapshot) and with a second SIGINT ending the
process at once (KeyboardInterrupt: main.py exits 130), for a user who will not wait for the iteration.
"""

from __future__ import annotations

import signal
from types import FrameType, TracebackType
from typing import Any

from engine.cli.common import CliError

EFFECTS = ("stop", "snapshot", "none")


def effect(flag: str, value: str) -> str:
    if value not in EFFECTS:
        raise CliError(f'--{flag}: invalid signal effect "{value}" (one of: stop, snapshot, none)')
    return value


class SignalHandler:
    def __init__(
        self,
        sigint_effect: str = "stop",
        sighup_effect: str | None = "snapshot",
        *,
        repeat_aborts: bool = False,
    ) -> None:
        """``sighup_effect`` None: SIGHUP is left as it was; ``repeat_aborts``: a SIGINT after the first
        raises KeyboardInterrupt."""
        self.effects = {signal.SIGINT: effect("sigint_effect", sigint_effect)}
        if hasattr(signal, "SIGHUP") and sighup_effect is not None:  # not on Windows
            self.effects[signal.SIGHUP] = effect("sighup_effect", sighup_effect)
        self.repeat_aborts = repeat_aborts
        self.interrupts = 0
        self._got: dict[int, bool] = dict.fromkeys(self.effects, False)
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT:
            self.interrupts += 1
            if self.repeat_aborts and self.interrupts > 1:
                raise KeyboardInterrupt
        self._got[signum] = True

    def __enter__(self) -> SignalHandler:
        for signum in self.effects:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def action(self) -> str | None:
        """The solver's action function: 'stop', 'snapshot' or None."""
        order = [s for s in (getattr(signal, "SIGHUP", None), signal.SIGINT) if s in self._got]
        for signum in order:
            if self._got[signum]:
                self._got[signum] = False
                chosen = self.effects[signum]
                return None if chosen == "none" else chosen
        return None
