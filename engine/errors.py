"""The engine's exceptions: each message names the layer, blob, file or field at fault."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


class EngineError(Exception):
    """Base of every error the engine raises on purpose."""


class NetError(EngineError):
    """The net cannot be built or run as described (bad wiring, shapes that do not fit, ...)."""


class LayerSetupError(NetError):
    """A layer refused its parameters or the shapes of its bottoms."""


class BackwardNotImplementedError(NetError, NotImplementedError):
    """A backward pass was asked of a layer that has none (Caffe's NOT_IMPLEMENTED)."""


class LayerOutOfMemoryError(NetError, MemoryError):
    """A layer's forward or backward pass could not allocate what it needs."""


class UnknownTypeError(EngineError, KeyError):
    """A layer, filler or solver type string that nobody registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def with_file(path: str, exc: EngineError) -> EngineError:
    """``exc`` with its message led by the file it came from (unless it already names it)."""
    text = str(exc)
    if text.startswith(f"{path}:") or text.startswith(f"{path} "):
        return exc
    try:
        named = type(exc)(f"{path}: {text}")
    except Exception:  # a subclass whose constructor takes other arguments
        named = EngineError(f"{path}: {text}")
    return named


@contextlib.contextmanager
def naming_file(path: str | os.PathLike[str]) -> Iterator[None]:
    """Errors raised inside name ``path`` first: the prototxt a net came from, the weights file."""
    try:
        yield
    except EngineError as exc:
        raise with_file(os.fspath(path), exc) from exc
