"""Fixtures for the engine's tests: ``threads`` (the engine's pool with 1, then 3 threads)."""

from tests.engine.kernel_sets import threads  # noqa: F401
