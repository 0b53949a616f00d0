"""One training at a time per snapshot prefix: ``PREFIX.lock`` beside the snapshots.

Two runs with the same ``snapshot_prefix`` would overwrite each other's ``PREFIX_iter_N`` files (an
iteration's caffemodel from one run, its solverstate from the other). Caffe lets them; here the run
holds an ``flock`` on ``PREFIX.lock`` (holding its pid and start time) while it trains, and a second
run refuses in one line naming the first. The kernel drops the lock when its process dies, so a lock
file left by a killed run (its pid gone) is taken over without a word. Where the lock cannot be made
(a read-only folder: the snapshot will say why; Windows, without flock) the run trains unlocked.
"""

from __future__ import annotations

import contextlib
import os
import time

from engine.errors import EngineError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


class PrefixLock:
    """Re-entrant within one solver (solve -> step -> snapshot); ``release`` when the depth is 0."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None
        self.depth = 0

    def acquire(self) -> None:
        self.depth += 1
        if self.depth == 1 and fcntl is not None:
            try:
                self.fd = _take(self.path)
            except BaseException:
                self.depth = 0
                raise

    def release(self) -> None:
        self.depth = max(self.depth - 1, 0)
        if self.depth or self.fd is None:
            return
        fd, self.fd = self.fd, None
        with contextlib.suppress(OSError):
            if _same_file(fd, self.path):
                os.unlink(self.path)  # unlinked while locked: a waiter re-checks the inode
        os.close(fd)

    def __enter__(self) -> PrefixLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _take(path: str) -> int | None:
    """The locked file's descriptor; None where no lock file can be made; EngineError when held."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(10):  # the holder may unlink the file between our open and our lock
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            if os.path.islink(path):
                raise EngineError(f"cannot lock {path}: it is a symbolic link") from exc
            return None  # a missing or read-only folder: the snapshot itself will say so
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read(fd)
            os.close(fd)
            raise EngineError(
                f"another training ({holder or 'a process'}) is writing snapshots with this prefix "
                f"(it holds {path}); wait for it to end or change snapshot_prefix"
            ) from None
        if not _same_file(fd, path):
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
        return fd
    return None


def _read(fd: int) -> str:
    with contextlib.suppress(OSError):
        return os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    return ""


def _same_file(fd: int, path: str) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)
