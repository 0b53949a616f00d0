"""Where the files a net names are looked for.

Caffe opens a relative ``source`` (and ``mean_file``) against the working directory. When that
path does not exist, a net's ``DataPaths`` tries its ``search_from`` folders (``main.py train``:
each net file's folder and those above it), then the data root: the one it was given (the bundled
MNIST a run prepared, engine/data/bundled.py), else the folder in the ``BARISTA_DATA_ROOT``
environment variable, else the bundled MNIST folder once it is prepared. Under the root the whole
relative path is tried first, then its last component alone, so Caffe's own
``examples/mnist/mnist_train_lmdb`` finds ``<root>/mnist_train_lmdb``.

A net is built with its DataPaths (``Net(..., data_paths=...)``, ``create_solver(...,
data_paths=...)``); ``DEFAULT`` (no folders, no root of its own) serves everything else.
Nothing here is set from outside: each run passes its own.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from pathlib import Path

ENV_VAR = "BARISTA_DATA_ROOT"


@dataclasses.dataclass(frozen=True)
class DataPaths:
    """The folders a net's relative data paths are tried in, after the working directory."""

    search_from: tuple[Path, ...] = ()
    root: Path | None = None  # None: BARISTA_DATA_ROOT, else the bundled MNIST once prepared

    def with_root(self, root: Path | str) -> DataPaths:
        return dataclasses.replace(self, root=Path(root))

    def data_root(self) -> Path | None:
        """The folder tried for relative paths that do not exist, if any."""
        if self.root is not None:
            return self.root
        value = os.environ.get(ENV_VAR)
        if value:
            return Path(value)
        bundled = user_data_dir() / "mnist"  # prepared by engine.data.mnist on the first LeNet run
        return bundled if bundled.is_dir() else None

    def resolve(self, path: str | os.PathLike[str], also: Iterable[Path] = ()) -> Path:
        """The file or folder ``path`` names; when nothing exists, the path as given (for the error)."""
        given = Path(os.path.expanduser(os.fspath(path)))
        if given.is_absolute() or given.exists():
            return given
        candidates = [folder / given for folder in (*also, *self.search_from)]
        root = self.data_root()
        if root is not None:
            candidates += [root / given, root / given.name]
        return next((c for c in candidates if c.exists()), given)


DEFAULT = DataPaths()


def data_root() -> Path | None:
    """The default data root (BARISTA_DATA_ROOT, else the bundled MNIST once prepared)."""
    return DEFAULT.data_root()


def resolve(path: str | os.PathLike[str], also: Iterable[Path] = ()) -> Path:
    """``path`` resolved by the default DataPaths (for files no net of a run names)."""
    return DEFAULT.resolve(path, also)


def user_data_dir() -> Path:
    """The per-user folder for data the app writes: ``$XDG_DATA_HOME/barista`` or its default."""
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~/AppData/Local")
    else:
        base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "barista"
