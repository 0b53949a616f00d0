"""tools/check_system.py's note on the compiled kernels: printed where the install built none (no C
compiler), naming each missing file; silent where they were built or turned off on purpose."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from engine.layers import channel_norm, conv_direct, max_pool

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def check_system():
    spec = importlib.util.spec_from_file_location("check_system", ROOT / "tools" / "check_system.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def nothing_built(monkeypatch):
    monkeypatch.delenv("BARISTA_DIRECT_CONV", raising=False)
    monkeypatch.delenv("BARISTA_CHANNEL_NORM", raising=False)
    monkeypatch.delenv("BARISTA_MAX_POOL", raising=False)
    monkeypatch.setattr(conv_direct, "_lib", None)
    monkeypatch.setattr(channel_norm, "_lib", None)
    monkeypatch.setattr(max_pool, "_lib", None)


def test_the_note_names_each_library_not_built(check_system, nothing_built, capsys):
    check_system.note_kernels()
    note = capsys.readouterr().err
    for name in ("direct_conv", "channel_norm", "max_pool"):
        assert f"engine/native/{name}.c" in note
    assert "install a C compiler" in note


def test_no_note_for_a_library_turned_off_on_purpose(check_system, nothing_built, monkeypatch, capsys):
    monkeypatch.setenv("BARISTA_CHANNEL_NORM", "0")
    check_system.note_kernels()
    note = capsys.readouterr().err
    assert "direct_conv.c" in note and "channel_norm.c" not in note
    monkeypatch.setenv("BARISTA_DIRECT_CONV", "0")
    monkeypatch.setenv("BARISTA_MAX_POOL", "0")
    check_system.note_kernels()
    assert capsys.readouterr().err == ""
