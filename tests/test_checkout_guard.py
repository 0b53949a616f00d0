"""The suite-wide check that no test writes into the checkout (tests/conftest.py, tests/checkout_guard.py)."""

from __future__ import annotations

import subprocess

from checkout_guard import snapshot, written


def _repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("*_iter_*.caffemodel\n__pycache__/\n")
    (tmp_path / "net.prototxt").write_text('name: "a"\n')
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    return tmp_path


def test_a_file_written_into_the_checkout_is_found_even_when_ignored(tmp_path):
    repo = _repo(tmp_path)
    before = snapshot(repo)
    (repo / "LeNet_iter_50.caffemodel").write_bytes(b"x")  # ignored, as the runner's snapshot was
    (repo / "net.prototxt").write_text('name: "b"\n')  # a tracked file changed
    left = written(before, snapshot(repo))
    assert any("LeNet_iter_50.caffemodel" in line for line in left)
    assert any("net.prototxt" in line for line in left)


def test_caches_are_not_counted(tmp_path):
    repo = _repo(tmp_path)
    before = snapshot(repo)
    (repo / "__pycache__").mkdir()
    (repo / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"")
    assert written(before, snapshot(repo)) == []


def test_outside_a_checkout_nothing_is_claimed(tmp_path):
    assert snapshot(tmp_path) is None
    assert written(None, None) == []
