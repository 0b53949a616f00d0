"""The app's trust gate for Python layers: which folders' nets may import their layers' modules.

``require_trust(folders)`` turns it on (the app: only the folders the user trusted); ``None``, the
default, is the CLI and pycaffe, where the user ran the net as with Caffe. ``engine.pyimport``
refuses a layer's import under it, and ``engine.pymodules`` keeps an untrusted folder off
``sys.path`` altogether. Kept apart from both so each can read it without importing the other.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

_gate_lock = threading.Lock()
_trusted: frozenset[str] | None = None  # None: no gate (CLI, pycaffe)


def _folder_key(folder: str) -> str:
    return os.path.normcase(os.path.realpath(folder))


def require_trust(folders: Iterable[str] | None) -> None:
    """Import Python layers' modules only for nets whose folders are all in ``folders`` (None: always)."""
    global _trusted
    with _gate_lock:
        _trusted = None if folders is None else frozenset(_folder_key(f) for f in folders)


def gated() -> bool:
    return _trusted is not None


def untrusted(where: Iterable[str]) -> list[str]:
    """The folders of ``where`` the gate would refuse ([] when there is no gate)."""
    trusted = _trusted
    if trusted is None:
        return []
    return [folder for folder in where if _folder_key(folder) not in trusted]


def allowed(where: Iterable[str]) -> bool:
    """Whether a net kept in ``where`` may run its Python layers now (an unsaved net under the gate: no)."""
    where = list(where)
    return not gated() or (bool(where) and not untrusted(where))
