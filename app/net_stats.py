"""Totals for the status bar: blob values, learnable parameters and forward FLOPs of a net.

Qt-free. Derived, never stored (DESIGN.md, "how data flows"), and from the canvas's own graph
(``graph_view.graph.build``: shape-only set-up, ``graph_view.flops`` per layer), so the status bar
and the boxes give one count of parameters and FLOPs, and no weight is allocated: a 3-line
InnerProduct 20000 -> 25000 reached 5.9 GB when a whole engine ``Net`` was built to count it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine import data_shapes
from engine.data_shapes import Shape
from engine.errors import EngineError
from graph_view.graph import Graph, build
from proto import caffe_pb2


@dataclass(frozen=True)
class Totals:
    blobs: int  # values held in the net's distinct blobs (in-place tops counted once)
    params: int  # learnable values (shared parameters counted once; BatchNorm's statistics are not learned)
    flops: int  # forward FLOPs for one image (a multiply-add is 2): the sum of the canvas's boxes
    layers: int  # layers in the TRAIN net, Split layers included


def graph_totals(graph: Graph) -> Totals:
    """The totals of a graph built with its Split layers; EngineError names the first layer whose
    shapes are unknown (the engine's own reason), as building the net would have."""
    for key, slot, blob in graph.dangling:  # Caffe's own words for it
        name = graph.layers[key].name
        raise EngineError(f"Unknown bottom blob '{blob}' (layer '{name}', bottom index {slot})")
    blobs = 0
    for key, layer in graph.layers.items():
        shapes = graph.shapes[key]
        complete = shapes.assumed is not None and shapes.assumed.complete
        if (shapes.error and not complete) or None in shapes.tops:
            raise EngineError(f"{layer.name}: {shapes.error or 'its input shapes are unknown'}")
        for slot, (top, shape) in enumerate(zip(layer.top, shapes.tops)):
            in_place = slot < len(layer.bottom) and layer.bottom[slot] == top
            if shape is not None and not in_place:
                blobs += math.prod(shape)
    return Totals(blobs, graph.total_params, round(graph.total_flops), len(graph.layers))


def net_totals(
    net: caffe_pb2.NetParameter,
    assumed: Mapping[str, Sequence[Shape]] | None = None,
    module_dirs: Sequence[str] = (),
) -> Totals:
    """Total ``net``'s TRAIN phase from its shapes. Raises EngineError saying why not.

    ``assumed``: data layer name -> the top shapes the canvas assumes for it (its data is absent);
    such a layer is taken as an Input of those shapes. ``module_dirs``: the net's folders, where its
    Python layers' modules are (imported only once the folder is trusted), as the canvas has them.
    """
    copy = data_shapes.as_inputs(net, assumed or {})
    return graph_totals(build(copy, caffe_pb2.TRAIN, splits=True, module_dirs=module_dirs))


def human(number: float) -> str:
    """12345678 -> '12.3M': three significant digits and an SI suffix."""
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(number) >= scale:
            value = number / scale
            return f"{value:.3g}{suffix}" if value < 1000 else f"{value:,.0f}{suffix}"
    return f"{number:.0f}"


def describe_failure(error: BaseException) -> str:
    """One line for the status bar: the engine's own message, without a traceback."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return f"shapes unavailable: {message}"


__all__ = ["EngineError", "Totals", "describe_failure", "graph_totals", "human", "net_totals"]
