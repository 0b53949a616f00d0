"""Fixtures the compiled kernels' tests share: each kernel set this CPU runs, and thread counts."""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

import pytest

from engine import parallel

SETS = ["avx512", "avx2", "baseline"]


def kernel_set_fixture(library: ModuleType) -> Any:
    """A fixture running its test once per kernel set of ``library`` (a module with ``select``),
    skipped for the sets this CPU cannot run; the best set is selected again afterwards."""

    @pytest.fixture(params=SETS)
    def kernel_set(request: Any) -> Any:
        if not library.select(request.param):
            pytest.skip(f"this CPU does not run the {request.param} kernels")
        yield request.param
        any(library.select(name) for name in SETS)

    return kernel_set


@pytest.fixture(params=[1, 3])
def threads(request: Any, monkeypatch: Any) -> int:
    """The engine's pool with one thread, then three (more than this machine's cores, maybe)."""
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(request.param))
    monkeypatch.setattr(parallel, "_pid", os.getpid())
    return int(request.param)
