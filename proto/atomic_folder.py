"""Write a folder of files so that readers see the old folder or the new one, never half of either.

The files go into a fresh temporary folder ``.NAME.xxxxxxxx.tmp`` beside the target (the same file
system), each written by proto.atomic (flushed to disk); a marker file listing them is written last.
Then the folder takes the target's place: a missing or empty target in one rename; an earlier
folder of ours (its marker is there) is swapped with the new one in one rename where Linux can
(renameat2's RENAME_EXCHANGE; two renames elsewhere) and removed, after the files in it that we did
not write (snapshots, logs a run left there) are moved into the new folder. A folder holding files
of someone else's, a file or a symbolic link at the target is refused. On an error the temporary
folder is removed; one a killed write left is removed by the next write of the same target once it
is a minute old and no live writer holds it locked. Every error is a ``WriteError`` naming the target.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator

from proto.atomic import WriteError, lstat_target, remove_stale_temps, write_bytes_atomic

try:
    import fcntl
except ImportError:  # Windows: stale temporary folders are told by their age alone
    fcntl = None  # type: ignore[assignment]

OURS, EMPTY, ABSENT = "ours", "empty", "absent"


class FolderWriter:
    """The temporary folder being filled; ``names`` are the files written so far."""

    def __init__(self, path: str, target: str) -> None:
        self.path, self.target = path, target
        self.names: list[str] = []

    def path_of(self, name: str) -> str:
        """Where to write the folder's file ``name`` (with proto.atomic), recorded as one of ours."""
        if os.path.basename(name) != name or name in ("", ".", ".."):
            raise ValueError(f"{name!r}: a file of the folder itself, not a path")
        self.names.append(name)
        return os.path.join(self.path, name)

    def write_bytes(self, name: str, data: bytes) -> None:
        write_bytes_atomic(self.path_of(name), data)

    def write_text(self, name: str, text: str) -> None:
        self.write_bytes(name, text.encode("utf-8"))


def folder_state(path: str | os.PathLike[str], marker: str, force: bool = False) -> str:
    """ABSENT, EMPTY or OURS (with ``force``); a WriteError for anything else, in words."""
    user = os.fspath(path)
    target, info = lstat_target(path)
    if info is None:
        return ABSENT
    if not stat.S_ISDIR(info.st_mode):
        raise WriteError(user, "it exists and is not a folder", errno.ENOTDIR)
    try:
        entries = os.listdir(target)
    except OSError as exc:
        raise WriteError(user, exc.strerror or str(exc), exc.errno or 0) from exc
    if not entries:
        return EMPTY
    if marker not in entries or not os.path.isfile(os.path.join(target, marker)):
        shown = ", ".join(sorted(entries)[:3]) + (", …" if len(entries) > 3 else "")
        reason = (
            f"the folder is not empty ({shown}) and holds no package of ours; choose a new or empty folder"
        )
        raise WriteError(user, reason, errno.ENOTEMPTY)
    if not force:
        raise WriteError(user, "it holds a package written earlier (--force replaces it)", errno.EEXIST)
    return OURS


@contextlib.contextmanager
def atomic_folder(
    path: str | os.PathLike[str], marker: str, heading: str, force: bool = False
) -> Iterator[FolderWriter]:
    """Yield a FolderWriter on a fresh temporary folder; when the block ends without error, the
    marker (``heading`` then the names written, one a line) is written and the folder replaces
    ``path``. ``force`` allows replacing an earlier folder of ours."""
    user = os.fspath(path)
    target = os.path.abspath(user)
    folder_state(user, marker, force)
    parent, name = os.path.split(target)
    remove_stale_folders(target)
    tmp, fd = _create_folder(user, parent, name)
    writer = FolderWriter(tmp, target)
    try:
        try:
            yield writer
            lines = [heading, *writer.names]
            write_bytes_atomic(os.path.join(tmp, marker), ("\n".join(lines) + "\n").encode("utf-8"))
            _fsync(tmp)
            _put_in_place(user, tmp, target, marker, force)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:
            os.close(fd)
    except OSError as exc:  # a WriteError of a file inside names it in the folder the user asked for
        name = exc.filename if isinstance(exc.filename, str) else ""
        where = os.path.join(user, os.path.relpath(name, tmp)) if name.startswith(tmp + os.sep) else user
        raise WriteError(where, (exc.strerror or str(exc)).replace(tmp, user), exc.errno or 0) from exc
    _fsync(parent)


def _put_in_place(user: str, tmp: str, target: str, marker: str, force: bool) -> None:
    state = folder_state(user, marker, force)  # again: another writer may have been faster
    if state != OURS:
        os.rename(tmp, target)  # onto nothing, or onto an empty folder (POSIX replaces it)
        return
    with open(os.path.join(target, marker), encoding="utf-8", errors="replace") as f:
        ours = set(f.read().splitlines()[1:]) | {marker}
    new = set(os.listdir(tmp))
    extras = [entry for entry in os.listdir(target) if entry not in ours]
    clash = sorted(set(extras) & new)
    if clash:
        raise WriteError(user, f"{clash[0]} there is not ours and the new folder writes it", errno.EEXIST)
    moved: list[str] = []
    try:
        for entry in extras:  # the user's own files (snapshots, logs) stay with the folder
            os.rename(os.path.join(target, entry), os.path.join(tmp, entry))
            moved.append(entry)
        if _exchange(tmp, target):
            shutil.rmtree(tmp, ignore_errors=True)  # tmp is now the old folder
            return
        aside = f"{tmp}.old"
        os.rename(target, aside)
        try:
            os.rename(tmp, target)
        except OSError:
            os.rename(aside, target)
            raise
    except BaseException:
        for entry in moved:  # back where they were, before the temporary folder is removed
            with contextlib.suppress(OSError):
                os.rename(os.path.join(tmp, entry), os.path.join(target, entry))
        raise
    shutil.rmtree(aside, ignore_errors=True)


def _exchange(a: str, b: str) -> bool:
    """Swap two paths in one step (Linux's renameat2 RENAME_EXCHANGE); False where that is not there."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, exchange = -100, 2
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), exchange)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):  # a file system without the exchange
        return False
    raise OSError(code, os.strerror(code), b)


def _create_folder(user: str, parent: str, name: str) -> tuple[str, int]:
    while True:
        tmp = os.path.join(parent, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            os.mkdir(tmp, 0o777)  # the umask decides, as for any new folder
        except FileExistsError:
            continue
        except OSError as exc:
            raise WriteError(user, exc.strerror or str(exc), exc.errno or 0) from exc
        fd = os.open(tmp, os.O_RDONLY)
        if fcntl is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # tells cleaners this one is alive
        return tmp, fd


def remove_stale_folders(target: str) -> list[str]:
    """Remove the temporary folders that killed writes of ``target`` left; returns their paths."""
    return remove_stale_temps(target, folders=True)


def _fsync(folder: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
