"""Fixtures of the app tests: a document opened on the tiny net, and its Qt-free history."""

from __future__ import annotations

import pytest
from tiny_net import NET
from undo_history import History

from app.document import Document


@pytest.fixture(autouse=True)
def _runs_folder(tmp_path_factory, monkeypatch):
    """Training an untitled net writes into the per-user runs folder: a temporary one in tests."""
    monkeypatch.setenv("BARISTA_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))


@pytest.fixture
def lenet_window(qtbot):
    """The window at 1280x800 on the LeNet example, its canvas drawn."""
    from windows import open_window

    from app.files import EXAMPLES

    w = open_window(qtbot, EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    w.graph.sync()
    yield w
    w.training.shutdown()


@pytest.fixture
def doc(tmp_path) -> Document:
    path = tmp_path / "tiny.prototxt"
    path.write_text(NET)
    doc = Document()
    doc.open_net(path)
    return doc


@pytest.fixture
def history(doc) -> History:
    return History(doc)
