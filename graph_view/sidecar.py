"""Where the user put the boxes, kept beside the net as ``NET.prototxt.layout.json``. Qt-free.

The prototxt stays pure Caffe: positions, the flow direction and which boxes show their in-place
layers unfolded are the editor's business, so they live in this small JSON file. A missing or
unreadable sidecar means "lay everything out automatically", never an error: a file that is not
JSON (or nests too deep to read, or is a FIFO or device) is ignored whole, and a position that is
not two finite numbers within ``LIMIT`` (NaN, Infinity, 1e308, a 400-digit integer) is treated
as absent, so that box is laid out automatically and the others keep their places.
The shapes a data layer had the last time its source was read (``data_shapes``, by
``engine.data_shapes.record_key``) and the input shapes the user assumed for blobs whose data is
absent (``input_shapes``) live here too; a malformed shape entry is dropped alone. The app's document
owns a ``ViewState`` (edits to it are undoable) and writes it here only when the net is saved.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace

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
    data_shapes: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)  # "TRAIN/data" -> top shapes
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # blob -> the user's assumed shape

    def copy(self) -> ViewState:
        return replace(
            self,
            positions=dict(self.positions),
            expanded=set(self.expanded),
            data_shapes={k: list(v) for k, v in self.data_shapes.items()},
            input_shapes=dict(self.input_shapes),
        )

    def is_default(self) -> bool:
        """Nothing the automatic layout (and a readable data source) would not give by itself."""
        return not (self.positions or self.downward or self.expanded or self.data_shapes or self.input_shapes)

    def only(self, names: set[str]) -> ViewState:
        """The state for the boxes in ``names`` (a deleted layer's position is not kept); the shapes,
        keyed by blob and data layer, stay."""
        state = self.copy()
        state.positions = {k: v for k, v in self.positions.items() if k in names}
        state.expanded = {k for k in self.expanded if k in names}
        return state


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
    return ViewState(
        positions,
        data.get("direction") == "down",
        names,
        _shape_lists(data.get("data_shapes")),
        {k: v[0] for k, v in _shape_lists(data.get("input_shapes"), single=True).items()},
    )


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


def _shape(value: object) -> tuple[int, ...] | None:
    if not isinstance(value, list) or not value or len(value) > 8:
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) and 0 < d < 2**31 for d in value):
        return None
    return tuple(value)


def _shape_lists(value: object, single: bool = False) -> dict[str, list[tuple[int, ...]]]:
    """{name: [shape, ...]} (or {name: shape} when ``single``) from JSON; bad entries are dropped."""
    out: dict[str, list[tuple[int, ...]]] = {}
    if not isinstance(value, dict):
        return out
    for key, entry in value.items():
        shapes = [entry] if single else entry
        if not isinstance(shapes, list):
            continue
        parsed = [_shape(s) for s in shapes]
        if parsed and all(p is not None for p in parsed):
            out[str(key)] = [p for p in parsed if p is not None]
    return out


def save(net_path: str | os.PathLike[str], state: ViewState) -> str:
    data: dict[str, object] = {
        "version": VERSION,
        "direction": "down" if state.downward else "up",
        "positions": {k: [round(x, 1), round(y, 1)] for k, (x, y) in sorted(state.positions.items())},
        "expanded": sorted(state.expanded),
    }
    if state.data_shapes:
        data["data_shapes"] = {k: [list(s) for s in v] for k, v in sorted(state.data_shapes.items())}
    if state.input_shapes:
        data["input_shapes"] = {k: list(v) for k, v in sorted(state.input_shapes.items())}
    target = path_for(net_path)
    write_text_atomic(target, json.dumps(data, indent=1) + "\n")
    return target
