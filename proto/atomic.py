"""Write a file so that readers see the old content or the new, never half of either.

The bytes go to a temporary file ``.NAME.xxxxxxxx.tmp`` in the same folder (so the rename cannot
cross file systems), are flushed to disk, and the temporary file then replaces the target with
``os.replace``. Writing a file onto itself (``upgrade net.prototxt net.prototxt``) is therefore safe.

The target must be a regular file or absent: a symbolic link planted there (a downloaded folder
pointing ``snap_iter_100.caffemodel`` at ``~/.bashrc``) is refused, naming it, and so are folders,
FIFOs and devices. New files get the permissions the umask gives; a replaced file keeps its own.
A temporary file of ours left by a killed write is removed the next time the same target is
written: one older than a minute that no live writer holds locked (ours lock theirs with flock,
as HDF5 locks the files it has open). Every error is a
``WriteError`` naming the user's path, never the temporary one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # Windows: stale temporary files are told by their age alone
    fcntl = None  # type: ignore[assignment]

STALE_AFTER_S = 60.0  # a temporary file younger than this may be one another writer is filling


class WriteError(OSError):
    """A file that cannot be written; ``str()`` is one line naming the user's path."""

    def __init__(self, path: str | os.PathLike[str], reason: str, code: int = 0) -> None:
        super().__init__(code, reason, os.fspath(path))

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}"


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with atomic_file(path) as tmp, open(tmp, "wb") as f:
        f.write(data)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` encoded as UTF-8, atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], lock: bool = True) -> Iterator[str]:
    """Yield a temporary path to write the new content to (h5py, numpy, open(..., "wb") all do);
    when the block ends without error the file is flushed to disk and replaces ``path``. On an
    error the temporary file is removed and an OSError becomes a WriteError naming ``path``.
    ``lock=False`` for writers that lock the file themselves (HDF5: a second flock would fail)."""
    user = os.fspath(path)
    target = check_target(user)
    folder = os.path.dirname(target)
    remove_stale_temps(target)
    tmp, fd = _create_temp(user, target, lock)
    try:
        try:
            yield tmp
            os.fsync(fd)  # the writer's bytes, through any handle on the same file
            with contextlib.suppress(FileNotFoundError):
                os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))  # a replaced file keeps its mode
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        finally:
            os.close(fd)
    except WriteError:
        raise
    except OSError as exc:
        raise WriteError(user, _reason(exc, tmp, user), exc.errno or 0) from exc
    _fsync_folder(folder)


def lstat_target(path: str | os.PathLike[str]) -> tuple[str, os.stat_result | None]:
    """(the absolute path, what is there now or None); a WriteError when its folder does not exist,
    it cannot be looked at, or it is a symbolic link (never written through)."""
    user = os.fspath(path)
    target = os.path.abspath(user)
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        folder = os.path.dirname(target)
        if not os.path.isdir(folder):
            raise WriteError(user, f"the folder {folder} does not exist", errno.ENOENT) from None
        return target, None
    except OSError as exc:
        raise WriteError(user, exc.strerror or str(exc), exc.errno or 0) from exc
    if stat.S_ISLNK(info.st_mode):
        raise WriteError(
            user,
            f"it is a symbolic link (to {os.readlink(target)}); refusing to write through it",
            errno.ELOOP,
        )
    return target, info


def check_target(path: str | os.PathLike[str]) -> str:
    """The absolute path to write; a WriteError when something other than a regular file is there
    (a symbolic link, a folder, a FIFO, a device) or its folder does not exist."""
    user = os.fspath(path)
    target, info = lstat_target(path)
    if info is None:
        return target
    if stat.S_ISDIR(info.st_mode):
        raise WriteError(user, "it is a folder, not a file", errno.EISDIR)
    if not stat.S_ISREG(info.st_mode):
        raise WriteError(user, "it is not a regular file (a FIFO, socket or device)", errno.EINVAL)
    return target


def check_folder_writable(folder: str | os.PathLike[str], what: str) -> None:
    """Refuse, up front, a folder where no file can be created (by creating and removing one)."""
    name = os.fspath(folder) or "."
    if not os.path.isdir(name):
        raise WriteError(what, f"the folder {name} does not exist", errno.ENOENT)
    probe = os.path.join(name, f".barista-probe.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise WriteError(
            what, f"no file can be created in {name}: {exc.strerror or exc}", exc.errno or 0
        ) from exc
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def temp_pattern(name: str) -> re.Pattern[str]:
    """Our temporary files for a target named ``name``."""
    return re.compile(rf"\.{re.escape(name)}\.[0-9a-f]{{8}}\.tmp")


def remove_stale_temps(target: str, folders: bool = False) -> list[str]:
    """Remove the temporary files (``folders``: the temporary folders, proto.atomic_folder's) that killed
    writes of ``target`` left; one still held by a live writer's lock is kept. Returns their paths."""
    folder, name = os.path.split(target)
    pattern = temp_pattern(name)
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder or "."))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        if not pattern.fullmatch(entry.name):  # an old package set aside (``.tmp.old``) is kept
            continue
        try:
            kind_ok = entry.is_dir(follow_symlinks=False) if folders else entry.is_file(follow_symlinks=False)
            if not kind_ok or now - entry.stat().st_mtime < STALE_AFTER_S:
                continue
            if _locked_by_a_writer(entry.path):
                continue
            if folders:
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(entry.path)
        except OSError:
            continue
    return removed


def _locked_by_a_writer(path: str) -> bool:
    if fcntl is None:
        return False
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # also drops the lock we may have taken
    return False


def _create_temp(user: str, target: str, lock: bool) -> tuple[str, int]:
    folder, name = os.path.split(target)
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
    while True:
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)  # 0o666: the umask decides, as for any new file
        except FileExistsError:
            continue
        except OSError as exc:
            raise WriteError(user, _reason(exc, tmp, user), exc.errno or 0) from exc
        if lock and fcntl is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # tells cleaners this one is alive
        return tmp, fd


def _reason(exc: OSError, tmp: str, user: str) -> str:
    """The error's own words, with our temporary name replaced by the user's path."""
    text = exc.strerror or str(exc)
    return " ".join(text.replace(tmp, user).split())


def _fsync_folder(folder: str) -> None:
    # Makes the rename itself durable; not possible on every platform (Windows), so best effort.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
