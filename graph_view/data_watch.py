"""Watch where the missing data of a net would appear, so its shapes and warnings follow at once.

A data layer whose source is not here (an LMDB not yet made, the bundled MNIST before the first
Train converts it) shows assumed shapes and a warning. When the source appears (Train converted
the bundled MNIST, the user made the data set in a terminal) the canvas is redrawn from the data
without reopening the net. Watched, for each such source: the nearest existing folder on the way to
it as the net names it (relative: from the working directory and from the net's folder) and under
the data root (engine.data.paths), the bundled MNIST's folder included.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject

from engine.data import paths as data_paths
from engine.data_shapes import reads_source
from engine.relative_paths import DATA_PATHS


def nearest_existing(path: Path) -> Path | None:
    """``path`` if it exists, else the nearest folder above it that does."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return None


def missing_sources(graph) -> list[str]:
    """The files the graph's data layers could not read, or whose shapes came from elsewhere."""
    found = []
    for key, shapes in graph.shapes.items():
        layer = graph.layers[key]
        unread = shapes.data_error or (shapes.assumed is not None and shapes.assumed.fact)
        if not (unread and reads_source(layer)):
            continue
        for message, name in DATA_PATHS:
            if layer.HasField(message):
                value = getattr(getattr(layer, message), name)
                if value:
                    found.append(value)
    return found


def places(sources: Iterable[str], net_path: str | None) -> set[str]:
    """The folders (and files) to watch for ``sources`` to appear."""
    roots = [Path.cwd()]
    if net_path:
        roots.append(Path(os.path.abspath(net_path)).parent)
    data_root = data_paths.data_root() or data_paths.user_data_dir() / "mnist"
    wanted: set[str] = set()
    for source in sources:
        given = Path(os.path.expanduser(source))
        tries = [given] if given.is_absolute() else [root / given for root in roots]
        tries += [data_root / given, data_root / given.name]
        for path in tries:
            for at in (path, path.parent):
                existing = nearest_existing(at)
                if existing is not None:
                    wanted.add(os.fspath(existing))
    return wanted


class DataWatch(QObject):
    """Calls ``appeared()`` when something changes where a missing source would be."""

    def __init__(self, appeared: Callable[[], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._watch = QFileSystemWatcher(self)
        self._watch.directoryChanged.connect(lambda _path: appeared())
        self._watch.fileChanged.connect(lambda _path: appeared())

    def follow(self, graph, net_path: str | None) -> None:
        """Watch the places of ``graph``'s missing sources (none: watch nothing)."""
        wanted = places(missing_sources(graph), net_path)
        watched = set(self._watch.files()) | set(self._watch.directories())
        if watched - wanted:
            self._watch.removePaths(sorted(watched - wanted))
        if wanted - watched:
            self._watch.addPaths(sorted(wanted - watched))

    def watched(self) -> set[str]:
        return set(self._watch.files()) | set(self._watch.directories())
