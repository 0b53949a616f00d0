"""Caffe's log lines (glog's format, on stderr), so Caffe's log parsers read ours unchanged.

A glog line is ``LMMDD HH:MM:SS.uuuuuu TTTTT file.cpp:NNN] message``: the severity letter, the
local date and time to the microsecond, the thread id right-aligned in five columns, and the source
position. ``caffe`` logs everything to stderr (it sets ``alsologtostderr``), so we do too and keep
stdout free. Log parsers (tools/extra/parse_log.py, parse_log.sh, extract_seconds.py) split on
whitespace and search the message; the source positions we print are the ones Caffe 1.0's lines
carry, for readers who grep them, and are cosmetic.
"""

from __future__ import annotations

import datetime
import logging
import re
import sys
import threading
from collections.abc import Callable

# Where Caffe 1.0 logs each kind of solver line from; the first pattern that matches wins.
_SOLVER_SOURCES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), source)
    for pattern, source in (
        (r"^Iteration \d+, lr = ", "sgd_solver.cpp:106"),
        (r"^Iteration \d+ \(", "solver.cpp:218"),
        (r"^    Train net output #", "solver.cpp:237"),
        (r"^Iteration \d+, Testing net", "solver.cpp:330"),
        (r"^Test interrupted", "solver.cpp:364"),
        (r"^Test loss: ", "solver.cpp:388"),
        (r"^    Test net output #", "solver.cpp:397"),
        (r"^Snapshotting to ", "solver.cpp:447"),
        (r"^Snapshotting solver state to ", "sgd_solver.cpp:273"),
        (r"^Iteration \d+, loss = ", "solver.cpp:310"),
        (r"^Optimization stopped early", "solver.cpp:307"),
        (r"^Optimization Done", "solver.cpp:315"),
        (r"^Solving ", "solver.cpp:289"),
        (r"^Initializing solver from parameters", "solver.cpp:48"),
        (r"^Solver scaffolding done", "solver.cpp:72"),
        (r"^Restoring previous solver status", "solver.cpp:296"),
        (r"^Learning Rate Policy", "solver.cpp:290"),
        (r"^Creating (training|test) net", "solver.cpp:87"),
        (r"^SGDSolver: restoring history", "sgd_solver.cpp:318"),
        (r"^MultiStep Status", "sgd_solver.cpp:54"),
        (r"^Gradient clipping", "sgd_solver.cpp:93"),
    )
)

# The same for tools/caffe.cpp's own lines.
_TOOL_SOURCES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), f"caffe.cpp:{number}")
    for pattern, number in (
        (r"^Finetuning from ", 155),
        (r"^Using GPUs ", 218),
        (r"^GPU \d+: ", 223),
        (r"^Resuming from ", 241),
        (r"^Starting Optimization", 248),
        (r"^Optimization Done", 259),
        (r"^Not using GPU #", 268),
        (r"^Use GPU with device ID ", 275),
        (r"^GPU device name: ", 279),
        (r"^Running for ", 290),
        (r"^Batch \d+, ", 313),
        (r"^Loss: ", 318),
        (r"^Performing Forward", 351),
        (r"^Initial loss: ", 356),
        (r"^Performing Backward", 357),
        (r"^\*\*\* Benchmark begins", 365),
        (r"^Testing for ", 366),
        (r"^Iteration: \d+ forward-backward", 394),
        (r"^Average time per layer", 397),
        (r"\tforward: ", 400),
        (r"\tbackward: ", 403),
        (r"^Average Forward pass", 408),
        (r"^Average Backward pass", 410),
        (r"^Average Forward-Backward", 412),
        (r"^Total Time", 415),
        (r"^\*\*\* Benchmark ends", 416),
        (r"^Querying GPUs", 114),
    )
)

_LEVELS = {logging.DEBUG: "I", logging.INFO: "I", logging.WARNING: "W", logging.ERROR: "E"}


def line(message: str, level: str = "I", source: str = "caffe.cpp:0") -> str:
    now = datetime.datetime.now()
    return f"{level}{now:%m%d %H:%M:%S.%f} {threading.get_native_id():5d} {source}] {message}"


def emit(message: str, level: str = "I", source: str = "caffe.cpp:0") -> None:
    """One log line on stderr; a multi-line message keeps its later lines bare, as glog leaves them."""
    print(line(message, level, source), file=sys.stderr, flush=True)


def printer(source: str, level: str = "I") -> Callable[[str], None]:
    """A ``say(message)`` that logs from ``source``."""

    def say(message: str) -> None:
        emit(message, level, source)

    return say


def _source(message: str, table: tuple[tuple[re.Pattern[str], str], ...], default: str) -> str:
    for pattern, source in table:
        if pattern.search(message):
            return source
    return default


def solver_source(message: str) -> str:
    return _source(message, _SOLVER_SOURCES, "solver.cpp:0")


def tool_printer(line_number: int) -> Callable[[str], None]:
    """``say`` for a command of tools/caffe.cpp; lines it does not know come from ``line_number``
    ("Use CPU." of that command, or the means of `test`)."""

    def say(message: str) -> None:
        emit(message, "I", _source(message, _TOOL_SOURCES, f"caffe.cpp:{line_number}"))

    return say


def solver_printer(message: str) -> None:
    """The solver's ``log_fn``: each line tagged with the source Caffe logs it from."""
    emit(message, "I", solver_source(message))


def warning(message: str, source: str = "caffe.cpp:210") -> None:
    emit(message, "W", source)


class _Handler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            level = _LEVELS.get(record.levelno, "F" if record.levelno > logging.ERROR else "I")
            emit(record.getMessage(), level, f"{record.filename}:{record.lineno}")
        except Exception:  # a log line must never end the run
            self.handleError(record)


_installed: list[logging.Logger] = []


def install(names: tuple[str, ...] = ("engine", "proto")) -> None:
    """Send the engine's own log records (net set-up, 'Ignoring source layer', ...) out as glog lines."""
    for name in names:
        logger = logging.getLogger(name)
        if logger in _installed:
            continue
        logger.addHandler(_Handler())
        logger.setLevel(logging.INFO)
        logger.propagate = False
        _installed.append(logger)
