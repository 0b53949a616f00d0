"""Open a file the user named as input, refusing anything but a regular file.

A FIFO given as a net, a list or weights would block the open (or the read) forever, and
``/dev/zero`` or ``/dev/urandom`` would be read until memory runs out. So inputs are opened
without blocking, checked with ``fstat`` on the open descriptor (no race with a swap), and a
folder, FIFO, socket or device is refused with a ``NotARegularFile`` naming the path.
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


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``open(path, "rb")`` for a regular file; NotARegularFile (an OSError) for anything else."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        kind = kind_of(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotARegularFile(path, kind)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_bytes(path: str | os.PathLike[str]) -> bytes:
    with open_regular(path) as f:
        return f.read()


def read_regular_text(path: str | os.PathLike[str]) -> str:
    """The file as UTF-8 text (UnicodeDecodeError when it is not)."""
    return read_regular_bytes(path).decode("utf-8")
