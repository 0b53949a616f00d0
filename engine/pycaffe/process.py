"""pycaffe's process-wide switches: logging, and the multi-GPU counts (one process, one solver here)."""

from __future__ import annotations

import logging

_solver_count = 1
_solver_rank = 0
_multiprocess = False


def init_log(level: int = 0, stderr: bool = True) -> None:
    """Route the engine's log lines (logger 'engine') to stderr, as glog does once initialised."""
    logging.basicConfig(level=logging.INFO if level <= 0 else logging.WARNING)


def log(message: str) -> None:
    logging.getLogger("engine").info(message)


def has_nccl() -> bool:
    return False  # no multi-GPU data parallelism: one solver per process


def solver_count() -> int:
    return _solver_count


def set_solver_count(count: int) -> None:
    global _solver_count
    _solver_count = int(count)


def solver_rank() -> int:
    return _solver_rank


def set_solver_rank(rank: int) -> None:
    global _solver_rank
    _solver_rank = int(rank)


def multiprocess() -> bool:
    """Whether the script said it runs one solver per process (pycaffe's set_multiprocess)."""
    return _multiprocess


def set_multiprocess(multiprocess: bool) -> None:
    global _multiprocess
    _multiprocess = bool(multiprocess)
