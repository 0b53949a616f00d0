"""The files pycaffe's constructors read: refused early, as pycaffe refuses them."""

from __future__ import annotations

from proto import caffe_pb2
from proto.inputs import NotARegularFile, open_regular


class FileError(RuntimeError, FileNotFoundError):
    """pycaffe's "Could not open file X": a RuntimeError there, and a FileNotFoundError here too."""


def check_file(path: str) -> None:
    """Fail early, as pycaffe's Net constructor does, on a file that cannot be opened."""
    try:
        with open_regular(path):
            pass
    except OSError as exc:
        reason = f": {exc.strerror}" if isinstance(exc, NotARegularFile) else ""
        raise FileError(f"Could not open file {path}{reason}") from None


def read_net(path: str) -> caffe_pb2.NetParameter:
    from proto import textio

    return textio.read_net(path)
