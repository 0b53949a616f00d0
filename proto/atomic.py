"""Write a file so that readers see the old content or the new, never half of either.

The bytes go to a temporary file in the same folder (so the rename cannot cross file systems),
are flushed to disk, and the temporary file then replaces the target with ``os.replace``.
Writing a file onto itself (``upgrade net.prototxt net.prototxt``) is therefore safe.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically; a symlink's target is replaced, not the link."""
    target = os.path.realpath(os.fspath(path))
    folder = os.path.dirname(target)
    tmp, fd = _create_temp(target)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileNotFoundError):
            # The new file keeps the permissions the old one had.
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` encoded as UTF-8, atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))


def _create_temp(target: str) -> tuple[str, int]:
    folder, name = os.path.split(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            # Mode 0o666 lets the umask decide, as for any newly created file.
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue


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
