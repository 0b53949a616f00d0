"""A folder written whole or not at all: built under a temporary name beside its target, renamed
into place at the end, removed if anything fails or the run is cancelled or interrupted."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from engine.data.errors import DataError


def check_target(target: Path, force: bool, what: str) -> None:
    """Refuse before any work: a target that exists (unless ``force``) or a missing parent folder."""
    if (target.exists() or target.is_symlink()) and not force:
        raise DataError(f"{what} {target} already exists (remove it, or choose another name)")
    if not target.parent.is_dir():
        raise DataError(f"cannot write {target}: the folder {target.parent} does not exist")


@contextlib.contextmanager
def staged_folder(target: Path, force: bool = False, what: str = "the output") -> Iterator[Path]:
    """Yield an empty temporary folder; on success it becomes ``target`` (an old one, with
    ``force``, is replaced only then), on any error or interrupt it is removed."""
    target = Path(os.path.abspath(target))
    check_target(target, force, what)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    except OSError as exc:
        raise DataError(f"cannot write into {target.parent}: {exc.strerror or exc}") from exc
    try:
        yield tmp
        old = None
        if target.exists() or target.is_symlink():
            check_target(target, force, what)  # it may have appeared while we worked
            old = target.parent / f"{tmp.name}.old"
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            _remove(old)
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()
