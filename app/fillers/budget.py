"""How much memory a filler preview or "How the net starts" would take, known from shapes first.

Both build a real engine ``Net``; a net with a 500M-value blob would allocate gigabytes before
saying anything. So the values are counted from the canvas's shape-only graph beforehand (nothing
allocated), and a net past ``BUDGET`` is refused in words instead of built. Qt-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from graph_view.graph import build
from proto import caffe_pb2

# What one preview may take: float32 values, 4 bytes each (the weights a filler writes, and for a
# forward and backward pass every blob's data and diff too). VGG-16's 138M weights draw within it.
BUDGET = 1 << 30


def values(param: caffe_pb2.NetParameter, phase: int, module_dirs: Sequence[str] = ()) -> tuple[int, int]:
    """(parameter values, blob values) of ``param``'s ``phase`` net, from shapes alone; unknown
    shapes count nothing (the build that follows says what is wrong with them)."""
    graph = build(param, phase, module_dirs=module_dirs)
    params = blobs = 0
    for key, layer in graph.layers.items():
        shapes = graph.shapes[key]
        params += sum(math.prod(s) for s in shapes.params)
        for slot, (top, shape) in enumerate(zip(layer.top, shapes.tops)):
            if shape is not None and not (slot < len(layer.bottom) and layer.bottom[slot] == top):
                blobs += math.prod(shape)
    return params, blobs


def gib(size: float) -> str:
    return f"{size / 2**30:,.1f} GiB" if size >= 2**30 else f"{size / 2**20:,.0f} MiB"


def refusal(count: int, bytes_each: int, what: str, budget: int | None = None) -> str | None:
    """Words refusing ``count`` values of ``bytes_each`` past the budget, or None within it."""
    limit = BUDGET if budget is None else budget
    size = count * bytes_each
    if size <= limit:
        return None
    return (
        f"{what} would take {count:,} values ({gib(size)}), past the preview's memory budget of {gib(limit)}"
    )
