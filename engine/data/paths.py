"""Where the files a net names are looked for: the one rule for data paths, for the canvas's shapes,
View Data, Train in the window and ``main.py train`` alike.

Caffe opens a relative ``source``, ``mean_file`` and ``root_folder`` + image path against the
working directory. When that path does not exist, a net's ``DataPaths`` tries its ``search_from``
folders (``DataPaths.beside``: the net's and solver's files' folders and those above them), then the
data root: the one it was given (the bundled MNIST a run prepared, engine/data/bundled.py), else the
folder in the ``BARISTA_DATA_ROOT`` environment variable, else the bundled MNIST folder once it is
prepared. Under the root the whole relative path is tried first, then its last component alone, so
Caffe's own ``examples/mnist/mnist_train_lmdb`` finds ``<root>/mnist_train_lmdb``.

A net is built with its DataPaths (``Net(..., data_paths=...)``, ``create_solver(...,
data_paths=...)``); ``DEFAULT`` (no folders, no root of its own) serves everything else.
Nothing here is set from outside: each run passes its own.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

ENV_VAR = "BARISTA_DATA_ROOT"


@dataclasses.dataclass(frozen=True)
class DataPaths:
    """The folders a net's relative data paths are tried in, after the working directory."""

    search_from: tuple[Path, ...] = ()
    root: Path | None = None  # None: BARISTA_DATA_ROOT, else the bundled MNIST once prepared

    @classmethod
    def beside(cls, *files: str | os.PathLike[str] | None) -> DataPaths:
        """Paths looked for beside each of ``files`` (a net, its solver) and in the folders above
        it, after the working directory, as ``net:`` paths are (engine/relative_paths.py)."""
        from engine.relative_paths import folders_from

        folders = [f for path in files if path for f in folders_from(path)]
        return cls(search_from=tuple(dict.fromkeys(folders)))

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

    def candidates(
        self, path: str | os.PathLike[str], also: Iterable[Path] = (), to_come: bool = False
    ) -> Iterator[Path]:
        """Where ``path`` is looked for, in order: as given (an absolute path, or against the working
        directory), beside ``also`` and each ``search_from`` folder, then under the data root (the
        whole path, then its last component). ``to_come``: with no data root yet, under the bundled
        MNIST's folder, where Train will prepare it (what a watch for the data to appear needs)."""
        given = Path(os.path.expanduser(os.fspath(path)))
        yield given
        if given.is_absolute():
            return
        for folder in (*also, *self.search_from):
            yield folder / given
        root = self.data_root()
        if root is None and to_come:
            root = user_data_dir() / "mnist"
        if root is not None:
            yield root / given
            yield root / given.name

    def resolve(self, path: str | os.PathLike[str], also: Iterable[Path] = ()) -> Path:
        """The file or folder ``path`` names; when nothing exists, the path as given (for the error)."""
        tries = self.candidates(path, also)
        given = next(tries)
        return given if given.exists() else next((c for c in tries if c.exists()), given)

    def folder_problem(self, folder: str) -> str | None:
        """Why ``folder`` (an ImageData ``root_folder``, glued in front of each image's path as a
        string) names no folder; None when it does, or names none (``"img_"`` is a name prefix)."""
        head = folder_head(folder)
        if not head or self.resolve(head).is_dir():
            return None
        relative = not os.path.isabs(os.path.expanduser(head))
        return f"its root_folder '{folder}' is not a folder" + (
            f" (looked for {self.places()})" if relative else ""
        )

    def places(self) -> str:
        """Where a relative path is looked for, in words, in order."""
        places = [f"in the working directory {os.getcwd()}"]
        if self.search_from:
            places.append(f"in {self.search_from[0]} and the folders above it")
        root = self.data_root()
        if root is not None:
            places.append(f"in the data root {root}")
        return ", then ".join(places)


DEFAULT = DataPaths()


def folder_head(folder: str) -> str:
    """The folder part of an ImageData ``root_folder``: up to its last separator ("" for none)."""
    return folder[: max(folder.rfind("/"), folder.rfind(os.sep)) + 1]


def beside_document(doc: object) -> DataPaths:
    """``DataPaths.beside`` a document's files (its ``net_path``, ``solver_path`` and ``origin``, the
    file an untitled copy came from): where the canvas, View Data and a run of it look alike."""
    return DataPaths.beside(*(getattr(doc, name, None) for name in ("net_path", "solver_path", "origin")))


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
