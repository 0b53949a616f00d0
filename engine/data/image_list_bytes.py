"""The image list of Caffe's ``convert_imageset``, read as bytes: one ``PATH LABEL`` per line.

As Caffe reads it, the label is what follows the line's last space (paths may hold spaces) and the
path is taken byte for byte (a name that is not UTF-8 still opens, and its key keeps its bytes).
Where Caffe would quietly take a missing or non-numeric label as 0, this refuses the line, naming
it; blank lines are skipped, and a Windows line end is allowed.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.data.errors import DataError
from proto.inputs import read_regular_bytes

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
_LABEL = re.compile(rb"\s*[+-]?\d+\s*\Z")  # atoi's integer, with the \r of a Windows line end


def read_image_list(path: Path) -> list[tuple[bytes, int]]:
    """(path bytes, label) of every line, in order; a DataError naming the file and line."""
    try:
        data = read_regular_bytes(path)
    except OSError as exc:
        raise DataError(f"cannot open the image list {path}: {exc.strerror or exc}") from exc
    lines = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        name, space, label = line.rpartition(b" ")
        if not space or not name or not _LABEL.match(label):
            shown = line[:60].decode("utf-8", "backslashreplace") + ("..." if len(line) > 60 else "")
            raise DataError(f"{path}:{number}: expected 'PATH LABEL' (the label an integer), got {shown!r}")
        value = int(label)
        if not INT_MIN <= value <= INT_MAX:
            raise DataError(f"{path}:{number}: the label {value} does not fit in 32 bits (Caffe's int)")
        lines.append((name, value))
    if not lines:
        raise DataError(f"the image list {path} names no images")
    return lines
