"""Where the user put the boxes, kept beside the net as ``NET.prototxt.layout.json``. Qt-free.

The prototxt stays pure Caffe: positions, the flow direction and which boxes show their in-place
layers unfolded are the editor's business, so they live in this small JSON file. A missing or
unreadable sidecar means "lay everything out automatically", never an error: a file that is not
JSON (or nests too deep to read, or is a FIFO or device) is ignored whole, and a position that is
not two finite numbers within ``LIMIT`` (NaN, Infinity, 1e308, a 400-digit integer) is treated
as absent, so that box is laid out automatically and the others keep their places.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

from proto.atomic import write_text_atomic
from proto.inputs import read_regular_text

SUFFIX = ".layout.json"
VERSION = 1
LIMIT = 1e7  # scene units: far beyond any real layout, far below where float arithmetic breaks


@dataclass
class ViewState:
    positions: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> centre, top-to-bottom y
    downward: bool = False
    expanded: set[str] = field(default_factory=set)


def path_for(net_path: str | os.PathLike[str]) -> str:
    return os.fspath(net_path) + SUFFIX


def load(net_path: str | os.PathLike[str] | None) -> ViewState | None:
    if not net_path:
        return None
    try:
        data = json.loads(read_regular_text(path_for(net_path)))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    raw = data.get("positions")
    positions = {}
    for name, value in raw.items() if isinstance(raw, dict) else ():
        point = _point(value)
        if point is not None:
            positions[str(name)] = point
    expanded = data.get("expanded")
    names = {str(k) for k in expanded if isinstance(k, str)} if isinstance(expanded, list) else set()
    return ViewState(positions, data.get("direction") == "down", names)


def _point(value: object) -> tuple[float, float] | None:
    """(x, y) when ``value`` is a pair of finite numbers within LIMIT, else None."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    point = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return None
        try:
            number = float(v)
        except OverflowError:  # an integer with hundreds of digits
            return None
        if not math.isfinite(number) or abs(number) > LIMIT:
            return None
        point.append(number)
    return point[0], point[1]


def save(net_path: str | os.PathLike[str], state: ViewState) -> str:
    data = {
        "version": VERSION,
        "direction": "down" if state.downward else "up",
        "positions": {k: [round(x, 1), round(y, 1)] for k, (x, y) in sorted(state.positions.items())},
        "expanded": sorted(state.expanded),
    }
    target = path_for(net_path)
    write_text_atomic(target, json.dumps(data, indent=1) + "\n")
    return target
