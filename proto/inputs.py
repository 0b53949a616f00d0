"""Open a file the user named as input, refusing anything but a regular file.

A FIFO given as a net, a list or weights would block the open (or the read) forever, and
``/dev/zero`` or ``/dev/urandom`` would be read until memory runs out. So inputs are opened
without blocking, checked with ``fstat`` on the open descriptor (no race with a swap), and a
folder, FIFO, socket or device is refused with a ``NotARegularFile`` naming the path.

A reader that takes the whole file into memory also names its kind, ``"text"`` or ``"binary"``: a
file larger than ``LIMITS`` allows it (512 MB of text, 2 GiB for a binary protobuf, which no
protobuf writer can exceed) or larger than the memory free now is refused with a ``TooLarge`` by
its size alone, before a byte is read.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotARegularFile(OSError):
    """An input path that names something other than a regular file; ``str()`` is one line."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(errno.EINVAL, f"it is {kind}, not a regular file", os.fspath(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


LIMITS = {
    "text": 512 * 2**20,  # no prototxt, solver, list or log comes near; a mistaken file does
    "binary": 2 * 2**30,  # protobuf's own ceiling for one message (Caffe's coded-stream limit)
}


class TooLarge(OSError):
    """An input too large to read whole; ``str()`` is one line with the size and the limit."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(errno.EFBIG, reason, os.fspath(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def megabytes(size: int) -> str:
    return f"{size / 2**20:,.0f} MB" if size >= 2**20 else f"{size:,} bytes"


def available_memory() -> int | None:
    """Bytes of memory free for a new allocation now (Linux's MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_size(path: str | os.PathLike[str], size: int, kind: str, what: str = "this kind of file") -> None:
    """Refuse ``size`` bytes of ``path`` past ``LIMITS[kind]`` or past the memory free now (TooLarge)."""
    limit = LIMITS[kind]
    if size > limit:
        raise TooLarge(path, f"{megabytes(size)}, more than {what} can be ({megabytes(limit)}); not read")
    free = available_memory()
    if free is not None and size > free:
        free_now = megabytes(free)
        raise TooLarge(path, f"{megabytes(size)}, more than the memory free now ({free_now}); not read")


def kind_of(mode: int) -> str | None:
    """What a non-regular file is ("a FIFO (named pipe)", ...); None for a regular file."""
    return next((kind for test, kind in _KINDS if test(mode)), None if stat.S_ISREG(mode) else "not a file")


def check_regular(path: str | os.PathLike[str]) -> None:
    """Refuse a path that exists and is not a regular file (following links, as opening would)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing or unreadable: the open that follows says so in its own words
    kind = kind_of(mode)
    if kind is not None:
        raise NotARegularFile(path, kind)


def open_regular(
    path: str | os.PathLike[str], limit: str | None = None, what: str = "this kind of file"
) -> BinaryIO:
    """``open(path, "rb")`` for a regular file; NotARegularFile (an OSError) for anything else, and
    TooLarge for a file over ``LIMITS[limit]`` (``what`` names the kind in the message) or over the
    memory free."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        info = os.fstat(fd)
        kind = kind_of(info.st_mode)
        if kind is not None:
            raise NotARegularFile(path, kind)
        if limit is not None:
            check_size(path, info.st_size, limit, what)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_bytes(path: str | os.PathLike[str], limit: str | None = None) -> bytes:
    with open_regular(path, limit) as f:
        return f.read()


def read_regular_text(path: str | os.PathLike[str]) -> str:
    """The file as UTF-8 text (UnicodeDecodeError when it is not; TooLarge past the text limit)."""
    return read_regular_bytes(path, "text").decode("utf-8")
