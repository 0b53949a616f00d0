"""Where the user put the boxes, kept beside the net as ``NET.prototxt.layout.json``. Qt-free.

The prototxt stays pure Caffe: positions, the flow direction and which boxes show their in-place
layers unfolded are the editor's business, so they live in this small JSON file. A missing or
unreadable sidecar means "lay everything out automatically", never an error.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from proto.atomic import write_text_atomic

SUFFIX = ".layout.json"
VERSION = 1


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
        with open(path_for(net_path), encoding="utf-8") as f:
            data = json.load(f)
        positions = {str(k): (float(v[0]), float(v[1])) for k, v in data.get("positions", {}).items()}
        return ViewState(
            positions, data.get("direction") == "down", {str(k) for k in data.get("expanded", [])}
        )
    except (OSError, ValueError, TypeError, AttributeError, IndexError, KeyError):
        return None


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
