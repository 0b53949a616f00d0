"""Where the files a net names are looked for.

Caffe opens a relative ``source`` (and ``mean_file``) against the working directory. When that
path does not exist, the data root is tried: ``DATA_ROOT`` (set by the app), else the folder in
the ``BARISTA_DATA_ROOT`` environment variable, else the bundled MNIST folder once it is
prepared. Under it the whole relative path is tried first, then its last component alone, so
Caffe's own ``examples/mnist/mnist_train_lmdb`` finds ``<root>/mnist_train_lmdb``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

ENV_VAR = "BARISTA_DATA_ROOT"
DATA_ROOT: Path | None = None
# Folders tried after the working directory (``main.py train``: each net file's folder and those above).
SEARCH_FROM: list[Path] = []


def data_root() -> Path | None:
    """The folder tried for relative paths that do not exist, if any."""
    if DATA_ROOT is not None:
        return Path(DATA_ROOT)
    value = os.environ.get(ENV_VAR)
    if value:
        return Path(value)
    bundled = user_data_dir() / "mnist"  # prepared by engine.data.mnist on the first LeNet run
    return bundled if bundled.is_dir() else None


def resolve(path: str | os.PathLike[str], also: Iterable[Path] = ()) -> Path:
    """The file or folder ``path`` names; when nothing exists, the path as given (for the error)."""
    given = Path(os.path.expanduser(os.fspath(path)))
    if given.is_absolute() or given.exists():
        return given
    candidates = [folder / given for folder in (*also, *SEARCH_FROM)]
    root = data_root()
    if root is not None:
        candidates += [root / given, root / given.name]
    return next((c for c in candidates if c.exists()), given)


def user_data_dir() -> Path:
    """The per-user folder for data the app writes: ``$XDG_DATA_HOME/barista`` or its default."""
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~/AppData/Local")
    else:
        base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "barista"
