"""Where a relative path in a Caffe file points. Qt-free.

Caffe's tools open relative paths against the working directory, and people run them from the
Caffe root, so BVLC's own files say ``net: "examples/cifar10/cifar10_quick_train_test.prototxt"``
in a solver that lives in ``examples/cifar10/``, and ``source: "examples/imagenet/ilsvrc12_train_lmdb"``
in a net under ``models/``. A path is therefore looked for in the folder of the file that names it,
then in each folder above that one (the first that has it is the Caffe root); the command line tries
the working directory first, as Caffe does. What was found says where it was found; what was not
is one line naming every place tried.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from engine.errors import EngineError
from proto import caffe_pb2

# (message field of LayerParameter, path field in it): the files a data layer reads.
DATA_PATHS = (
    ("data_param", "source"),
    ("data_param", "mean_file"),
    ("image_data_param", "source"),
    ("hdf5_data_param", "source"),
    ("window_data_param", "source"),
    ("transform_param", "mean_file"),
)


@dataclass(frozen=True)
class Found:
    given: str  # the path as the file says it
    path: Path  # where it is
    base: Path | None  # the folder it was found under (None: absolute, or the working directory)
    naming: Path | None  # the file that names it

    def note(self, what: str) -> str:
        """``"net examples/x.prototxt: found under /caffe (2 folders above the solver's)"``."""
        if self.base is None or self.naming is None:
            return f"{what} {self.given}: {self.path}"
        if self.naming is not None and self.base == self.naming.parent:
            return f"{what} {self.given}: found beside {self.naming.name} in {self.base}"
        above = len(self.naming.parent.parts) - len(self.base.parts)
        where = f" ({above} folder{'s' * (above != 1)} above {self.naming.name})" if above > 0 else ""
        return f"{what} {self.given}: found under {self.base}{where}"


def folders_from(naming: str | os.PathLike[str]) -> list[Path]:
    """The folder of ``naming`` and every folder above it, nearest first."""
    folder = Path(os.path.abspath(naming)).parent
    return [folder, *folder.parents]


def _candidates(
    given: str, naming: str | os.PathLike[str] | None, cwd_first: bool
) -> Iterator[tuple[Path, Path | None]]:
    path = Path(os.path.expanduser(given))
    if path.is_absolute():
        yield path, None
        return
    if cwd_first:
        yield Path(os.path.abspath(path)), None
    if naming is not None:
        for folder in folders_from(naming):
            yield folder / path, folder
    if not cwd_first:
        yield Path(os.path.abspath(path)), None


def find(
    given: str, naming: str | os.PathLike[str] | None, *, cwd_first: bool = False, folder: bool = False
) -> Found | None:
    """Where ``given`` (named in the file ``naming``) is: a file, or a folder when ``folder``."""
    for candidate, base in _candidates(given, naming, cwd_first):
        if candidate.is_dir() if folder else candidate.exists():
            return Found(given, candidate, base, Path(os.path.abspath(naming)) if naming else None)
    return None


def find_or_explain(
    given: str, naming: str | os.PathLike[str], what: str, *, cwd_first: bool = False
) -> Found:
    """``find``, or an EngineError in one line naming what was tried."""
    found = find(given, naming, cwd_first=cwd_first)
    if found is not None:
        return found
    raise EngineError(f"{naming}: {not_found(given, naming, what, cwd_first=cwd_first)}")


def not_found(given: str, naming: str | os.PathLike[str], what: str, *, cwd_first: bool = False) -> str:
    """``"net 'x.prototxt' not found: tried /a/x.prototxt, /x.prototxt, ..."`` (one line)."""
    tried = [str(c) for c, _ in _candidates(given, naming, cwd_first)]
    shown = tried if len(tried) <= 4 else [*tried[:3], f"... {len(tried) - 4} more ...", tried[-1]]
    return (
        f"{what} '{given}' not found: tried {', '.join(shown)} (a relative path is looked for beside "
        "the file and in each folder above it, as Caffe's tools run from the Caffe root)"
    )


def absolutize_data_paths(
    layer: caffe_pb2.LayerParameter, naming: str | os.PathLike[str] | None
) -> list[str]:
    """Give ``layer``'s relative data paths that are found from ``naming``'s folder (or above it)
    as absolute paths, in place; the notes say where each was found. Paths found nowhere stay as
    they are (the data root may still provide them)."""
    notes: list[str] = []
    if naming is None:
        return notes
    for message, name in DATA_PATHS:
        if not layer.HasField(message):
            continue
        param = getattr(layer, message)
        value = getattr(param, name)
        if not value or os.path.isabs(value) or os.path.exists(value):
            continue
        found = find(value, naming)
        if found is not None:
            setattr(param, name, str(found.path))
            notes.append(found.note(f"layer '{layer.name}': {message}.{name}"))
    return notes
