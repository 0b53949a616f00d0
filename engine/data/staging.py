"""A folder written whole or not at all: built under a temporary name beside its target, renamed
into place at the end, removed if anything fails or the run is cancelled or interrupted.

A run killed outright (SIGKILL, a power cut) cannot remove its ``.NAME.XXXX.partial`` folder: the
next run into the same place does. Each run holds an ``flock`` on a ``.partial.lock`` file beside
its folder while it works (the kernel releases it when the process dies), so only folders whose
lock is free are removed, never one another run is still writing. A folder without a lock file (a
run of an older version) counts as abandoned once it is a minute old."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from engine.data.errors import DataError


def check_target(target: Path, force: bool, what: str) -> None:
    """Refuse before any work: a target that exists (unless ``force``) or a missing parent folder."""
    if (target.exists() or target.is_symlink()) and not force:
        raise DataError(f"{what} {target} already exists (remove it, or choose another name)")
    if not target.parent.is_dir():
        raise DataError(f"cannot write {target}: the folder {target.parent} does not exist")


@contextlib.contextmanager
def staged_folder(target: Path, force: bool = False, what: str = "the output") -> Iterator[Path]:
    """Yield an empty temporary folder; on success it becomes ``target`` (an old one, with
    ``force``, is replaced only then), on any error or interrupt it is removed."""
    target = Path(os.path.abspath(target))
    check_target(target, force, what)
    remove_abandoned(target)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
        lock = _hold_lock(_lock_of(tmp))
    except OSError as exc:
        raise DataError(f"cannot write into {target.parent}: {exc.strerror or exc}") from exc
    try:
        yield tmp
        old = None
        if target.exists() or target.is_symlink():
            check_target(target, force, what)  # it may have appeared while we worked
            old = target.parent / f"{tmp.name}.old"
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            _remove(old)
    except BaseException:
        _remove(tmp)
        raise
    finally:
        _remove(_lock_of(tmp))
        os.close(lock)


STALE_WITHOUT_LOCK_S = 60.0
_SUFFIXES = (".partial", ".partial.old", ".partial.lock")


def remove_abandoned(target: Path) -> list[Path]:
    """Remove the ``.NAME.*.partial`` folders (and their leftovers) of runs into ``target`` that
    died without cleaning up; returns what was removed. A folder a live run holds is kept."""
    removed: list[Path] = []
    try:
        siblings = list(target.parent.iterdir())
    except OSError:
        return removed
    prefix = f".{target.name}."
    ours = [p for p in siblings if p.name.startswith(prefix) and p.name.endswith(_SUFFIXES)]
    bases = {p.parent / p.name.removesuffix(".old").removesuffix(".lock") for p in ours}
    dead = {base for base in bases if _abandoned(base)}  # decided before any lock file goes
    for path in sorted(ours):
        if path.parent / path.name.removesuffix(".old").removesuffix(".lock") in dead:
            _remove(path)
            removed.append(path)
    return removed


def _abandoned(folder: Path) -> bool:
    lock_path = _lock_of(folder)
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        try:
            return time.time() - os.lstat(folder).st_mtime > STALE_WITHOUT_LOCK_S
        except OSError:
            return True  # neither folder nor lock: a leftover .old or .lock alone
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # a live run holds it
    finally:
        os.close(fd)
    return True


def _lock_of(folder: Path) -> Path:
    return folder.parent / f"{folder.name}.lock"


def _hold_lock(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()
