"""proto.atomic_folder: a folder written whole beside the target and renamed into place (issue 30
case 6, issue 32 cases 2-3): a folder of someone else's is never written into, an earlier one of ours
only when asked, a failure leaves the previous folder as it was and no temporary folder behind."""

from __future__ import annotations

import errno
import os
import time

import pytest

from proto import atomic, atomic_folder
from proto.atomic import WriteError
from proto.atomic_folder import atomic_folder as write_folder

MARKER = ".ours"


def write(target, files: dict[str, bytes], force: bool = False) -> None:
    with write_folder(target, MARKER, "test folder", force) as folder:
        for name, data in files.items():
            folder.write_bytes(name, data)


def leftovers(parent) -> list[str]:
    return [p.name for p in parent.iterdir() if p.name.endswith((".tmp", ".old"))]


def test_a_new_folder_then_an_empty_one(tmp_path):
    write(tmp_path / "pkg", {"a.py": b"A", "b.txt": b"B"})
    assert (tmp_path / "pkg" / "a.py").read_bytes() == b"A"
    assert (tmp_path / "pkg" / MARKER).read_text().splitlines() == ["test folder", "a.py", "b.txt"]
    (tmp_path / "empty").mkdir()
    write(tmp_path / "empty", {"a.py": b"A"})
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == [MARKER, "a.py"]
    assert leftovers(tmp_path) == []


def test_a_folder_of_someone_elses_is_refused_and_untouched(tmp_path):
    (tmp_path / "train.py").write_text("the user's own")
    with pytest.raises(WriteError, match="not empty \\(train.py\\) and holds no package of ours"):
        write(tmp_path, {"train.py": b"ours"}, force=True)  # --force does not make it ours
    assert (tmp_path / "train.py").read_text() == "the user's own"
    assert leftovers(tmp_path.parent) == []


def test_an_earlier_folder_of_ours_needs_force_and_keeps_the_users_files(tmp_path):
    target = tmp_path / "pkg"
    write(target, {"a.py": b"old", "gone.txt": b"old"})
    with pytest.raises(WriteError, match="written earlier \\(--force replaces it\\)"):
        write(target, {"a.py": b"new"})
    assert (target / "a.py").read_bytes() == b"old"
    (target / "run_iter_10.caffemodel").write_bytes(b"a snapshot the user trained")
    write(target, {"a.py": b"new"}, force=True)
    assert (target / "a.py").read_bytes() == b"new"
    assert not (target / "gone.txt").exists()  # ours, no longer written
    assert (target / "run_iter_10.caffemodel").read_bytes() == b"a snapshot the user trained"
    assert leftovers(tmp_path) == []


def test_a_failure_part_way_leaves_the_previous_folder_and_nothing_else(tmp_path, monkeypatch):
    target = tmp_path / "pkg"
    write(target, {"a.py": b"old", "weights.pt": b"old weights"})
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    real_fsync = os.fsync

    def full_disk(fd: int) -> None:  # the second file of the new folder meets a full disk
        if "/.weights.pt." in os.readlink(f"/proc/self/fd/{fd}"):  # its temporary file
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", full_disk)
    with pytest.raises(WriteError) as caught:
        write(target, {"a.py": b"new", "weights.pt": b"new weights"}, force=True)
    assert str(caught.value) == f"cannot write {target / 'weights.pt'}: No space left on device"
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert leftovers(tmp_path) == []


def test_an_exception_in_the_block_removes_the_temporary_folder(tmp_path):
    with pytest.raises(RuntimeError), write_folder(tmp_path / "pkg", MARKER, "x") as folder:
        folder.write_bytes("a.py", b"A")
        raise RuntimeError("the exporter failed")
    assert list(tmp_path.iterdir()) == []


def test_links_and_files_at_the_target_are_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    with pytest.raises(WriteError, match="symbolic link"):
        write(tmp_path / "link", {"a.py": b"A"})
    (tmp_path / "file").write_text("x")
    with pytest.raises(WriteError, match="not a folder"):
        write(tmp_path / "file", {"a.py": b"A"})
    with pytest.raises(WriteError, match="does not exist"):
        write(tmp_path / "no" / "pkg", {"a.py": b"A"})
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_link_planted_in_an_earlier_package_is_replaced_not_written_through(tmp_path):
    target = tmp_path / "pkg"
    write(target, {"train.py": b"old"})
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (target / "train.py").unlink()
    os.symlink(victim, target / "train.py")
    write(target, {"train.py": b"new"}, force=True)
    assert victim.read_text() == "keep me"
    assert not (target / "train.py").is_symlink() and (target / "train.py").read_bytes() == b"new"


def test_a_killed_writes_temporary_folder_is_removed_by_the_next_write(tmp_path):
    stale = tmp_path / ".pkg.0123abcd.tmp"
    stale.mkdir()
    (stale / "weights.pt").write_bytes(b"torn")
    old = time.time() - 2 * atomic.STALE_AFTER_S
    os.utime(stale, (old, old))
    fresh = tmp_path / ".pkg.89abcdef.tmp"  # maybe another writer's, still filling it
    fresh.mkdir()
    write(tmp_path / "pkg", {"a.py": b"A"})
    assert not stale.exists() and fresh.exists()
    assert atomic_folder.remove_stale_folders(str(tmp_path / "pkg")) == []


def test_a_failed_swap_puts_the_users_files_back(tmp_path, monkeypatch):
    """The user's files move into the new folder just before the swap: when the swap fails they go
    back into the old one, never removed with the temporary folder."""
    target = tmp_path / "pkg"
    write(target, {"a.py": b"old"})
    (target / "run.log").write_text("the user's log")

    def refused(a: str, b: str) -> bool:
        raise OSError(errno.EIO, "Input/output error", b)

    monkeypatch.setattr(atomic_folder, "_exchange", refused)
    with pytest.raises(WriteError, match="Input/output error"):
        write(target, {"a.py": b"new"}, force=True)
    assert (target / "run.log").read_text() == "the user's log" and (target / "a.py").read_bytes() == b"old"
    assert leftovers(tmp_path) == []
