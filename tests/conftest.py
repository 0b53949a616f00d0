"""Fixtures shared by every test folder: the array backends and the Caffe goldens."""

from __future__ import annotations

import os
import sys
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


@pytest.fixture(autouse=True)
def modal_dialogs(request, monkeypatch) -> list[str]:
    """In tests that use Qt widgets, a question box the test did not answer (e.g. a window left with
    unparsable text asks on close, when pytest-qt closes it) is answered Escape at once and its text
    kept here, rather than waiting forever for a click nobody makes. Tests marked ``real_dialogs``
    click them themselves. Engine tests never load Qt for this."""
    asked: list[str] = []
    widgets = sys.modules.get("PySide6.QtWidgets")
    if widgets is None or request.node.get_closest_marker("real_dialogs"):
        return asked

    def answer(box) -> int:
        asked.append(box.text())
        escape = box.escapeButton()
        if escape is not None:
            escape.click()  # what the Escape key would do
        return int(widgets.QMessageBox.StandardButton.Cancel.value)

    monkeypatch.setattr(widgets.QMessageBox, "exec", answer)
    return asked


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller, not an xdist worker
        from checkout_guard import snapshot

        session.config._checkout_before = snapshot(REPO)


def pytest_sessionfinish(session, exitstatus):
    before = getattr(session.config, "_checkout_before", None)
    if hasattr(session.config, "workerinput") or before is None:
        return
    from checkout_guard import snapshot, written

    left = written(before, snapshot(REPO))
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = "the tests wrote into the checkout (use tmp_path): " + ", ".join(left)
        if reporter is not None:
            reporter.write_line(f"\nFAILED checkout guard: {message}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> Path:
    """The working directory: a folder with no data; no data root, no bundled MNIST."""
    from engine.data import paths

    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.setattr(paths, "user_data_dir", lambda: tmp_path / "no-user-data")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    return tmp_path / "elsewhere"
