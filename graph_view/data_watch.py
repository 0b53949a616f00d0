"""Watch where the missing data of a net would appear, so its shapes and warnings follow at once.

A data layer whose source is not here (an LMDB not yet made, an ImageData root_folder not yet
filled, the bundled MNIST before the first Train converts it) shows assumed shapes and a warning.
When the data appears (Train converted the bundled MNIST, the user made the data set in a terminal)
the canvas is redrawn from the data without reopening the net.

Watched: the places the net's DataPaths (engine/data/paths.py) would look for each missing source,
``mean_file`` and ImageData ``root_folder``, in its order (the working directory, beside the net and
solver and each folder above them, the data root, the bundled MNIST's folder to come): for each, the
nearest folder on the way that exists, or the path itself once it exists. One inotify watch per
folder, at most ``MAX_PLACES`` of them, nearest first. A folder above the net changes for many
reasons (``/tmp``): an event redraws only when something appeared, went or was replaced on the way
to a source, or changed inside a source that is there, checked with a few ``stat`` calls.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject

from engine.data.paths import DEFAULT, DataPaths, folder_head
from engine.data_shapes import reads_source
from engine.relative_paths import DATA_PATHS

MAX_PLACES = 64  # folders (and files) watched for one net, the nearest places first

Mark = tuple[Path | None, int]  # the nearest existing path on the way to a place, its inode if there


def nearest_existing(path: Path) -> Path | None:
    """``path`` if it exists, else the nearest folder above it that does."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return None


def missing_sources(graph) -> list[str]:
    """The paths the graph's data layers could not read, or whose shapes came from elsewhere: their
    sources and mean files, and an ImageData layer's root_folder (the folder part)."""
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
        if layer.HasField("image_data_param") and folder_head(layer.image_data_param.root_folder):
            found.append(folder_head(layer.image_data_param.root_folder))
    return found


def candidates(sources: list[str], data_paths: DataPaths) -> list[Path]:
    """Every absolute path ``data_paths`` would try for ``sources``, in its order, each once."""
    cwd = Path.cwd()
    tries = (cwd / c for source in sources for c in data_paths.candidates(source, to_come=True))
    return list(dict.fromkeys(Path(os.path.normpath(c)) for c in tries))


def places(sources: list[str], data_paths: DataPaths = DEFAULT) -> set[str]:
    """The folders (and files) to watch for ``sources`` to appear: at most ``MAX_PLACES``."""
    return set(_places(candidates(sources, data_paths)))


def _places(tries: list[Path]) -> dict[str, None]:
    wanted: dict[str, None] = {}
    for path in tries:
        # A source that exists (unreadable, half written): it and its folder, which sees it replaced.
        for at in (path, path.parent):
            existing = nearest_existing(at)
            if existing is not None:
                wanted[os.fspath(existing)] = None
        if len(wanted) >= MAX_PLACES:
            return dict.fromkeys(list(wanted)[:MAX_PLACES])
    return wanted


def _mark(path: Path) -> Mark:
    """Where the way to ``path`` stops, and the inode there when ``path`` exists (it was replaced)."""
    existing = nearest_existing(path)
    if existing != path:
        return existing, 0
    try:
        return path, path.stat().st_ino
    except OSError:  # gone between the two calls: its folder's event marks it again
        return None, 0


class DataWatch(QObject):
    """Calls ``appeared()`` when something changes where a missing source would be."""

    def __init__(self, appeared: Callable[[], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._appeared = appeared
        self._tries: list[Path] = []
        self._marks: list[Mark] = []
        self._watch = QFileSystemWatcher(self)
        self._watch.directoryChanged.connect(self._changed)
        self._watch.fileChanged.connect(lambda _path: appeared())  # only sources that exist are files

    def follow(self, graph, data_paths: DataPaths = DEFAULT) -> None:
        """Watch the places of ``graph``'s missing sources (none: watch nothing)."""
        tries = candidates(missing_sources(graph), data_paths)
        wanted = set(_places(tries))
        self._tries = [t for t in tries if os.fspath(nearest_existing(t) or "") in wanted]
        self._marks = [_mark(t) for t in self._tries]
        watched = self.watched()
        if watched - wanted:
            self._watch.removePaths(sorted(watched - wanted))
        if wanted - watched:
            self._watch.addPaths(sorted(wanted - watched))

    def _changed(self, folder: str) -> None:
        """A folder above the net changes for many reasons: redraw only when the way to a source
        changed, or something changed inside a source (an LMDB, a root_folder) that is there."""
        marks = [_mark(t) for t in self._tries]
        inside = any(os.fspath(t) == folder and m[0] == t for t, m in zip(self._tries, marks))
        if inside or marks != self._marks:
            self._marks = marks
            self._appeared()

    def watched(self) -> set[str]:
        return set(self._watch.files()) | set(self._watch.directories())
