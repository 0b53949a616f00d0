"""Fixtures shared by every test folder: the array backends and the Caffe goldens."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from engine import backend, pyimport

REPO = Path(__file__).resolve().parent.parent


def _goldens_dir() -> Path | None:
    # A copy lives in the repo so a clean clone tests itself; CAFFE_GOLDENS points at another set.
    for candidate in (os.environ.get("CAFFE_GOLDENS"), REPO / "tests" / "data" / "caffe-goldens"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


GOLDENS = _goldens_dir()


def _backends() -> list:
    reason = backend.gpu_unavailable_reason()
    return [
        pytest.param(np, id="numpy"),
        pytest.param("cupy", id="cupy", marks=pytest.mark.skipif(bool(reason), reason=f"GPU: {reason}")),
    ]


@pytest.fixture(params=_backends())
def xp(request):
    """Run the test body once per array module: numpy, and cupy where a GPU can be used."""
    if request.param == "cupy":
        return backend.array_module("gpu")
    return request.param


@pytest.fixture
def goldens() -> Path:
    if GOLDENS is None:
        pytest.fail("Caffe goldens not found: set CAFFE_GOLDENS or restore tests/data/caffe-goldens")
    return GOLDENS


@pytest.fixture(autouse=True)
def _seed():
    from engine import rng

    rng.set_random_seed(1701)
    yield


@pytest.fixture(autouse=True)
def _no_trust_gate():
    """A window turns on the app's trust gate for Python layers (engine.pyimport); no test inherits it."""
    yield
    pyimport.require_trust(None)
