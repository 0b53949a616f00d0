"""Totals for the status bar: blob values, learnable parameters and forward FLOPs of a net.

Qt-free. Derived, never stored (DESIGN.md, "how data flows"): an engine ``Net`` is built on a copy
of the document's net in the TRAIN phase and measured. The copy's fillers are set to
``constant`` first: the totals do not depend on the initial values, and drawing 60 million
random weights for a status line would take seconds and consume the engine's seeded RNG.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from engine import data_shapes
from engine.data_shapes import Shape
from engine.errors import EngineError
from engine.net import Net
from proto import caffe_pb2

_FILLERS = ("weight_filler", "bias_filler", "filler", "data_filler")
# Layers that move no arithmetic: views, copies, sources.
_FREE = {
    "Input",
    "Data",
    "ImageData",
    "HDF5Data",
    "MemoryData",
    "DummyData",
    "Split",
    "Silence",
    "Reshape",
    "Flatten",
    "Parameter",
    "BatchReindex",
}


@dataclass(frozen=True)
class Totals:
    blobs: int  # values held in the net's distinct blobs (in-place tops counted once)
    params: int  # learnable values (shared parameters counted once)
    flops: int  # forward floating-point operations for one batch (a multiply-add is 2)
    layers: int  # layers in the TRAIN net, Split layers included


def _constant_fillers(message: Message) -> None:
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        items = value if field.is_repeated else [value]
        for item in items:
            if field.name in _FILLERS and field.message_type.name == "FillerParameter":
                item.Clear()
                item.type = "constant"
            else:
                _constant_fillers(item)


def layer_flops(
    layer_type: str,
    bottoms: list[tuple[int, ...]],
    tops: list[tuple[int, ...]],
    weights: list[tuple[int, ...]],
) -> int:
    """Forward FLOPs of one layer from its blob shapes: exact for dense layers, one per output otherwise."""
    if layer_type in _FREE:
        return 0
    top_count = sum(math.prod(shape) for shape in tops)
    if layer_type in ("Convolution", "InnerProduct") and weights:
        per_output = (
            math.prod(weights[0][1:])
            if layer_type == "Convolution"
            else math.prod(weights[0]) // max(weights[0][0], 1)
        )
        return 2 * top_count * per_output + (top_count if len(weights) > 1 else 0)
    if layer_type == "Deconvolution" and weights and bottoms:
        return 2 * math.prod(bottoms[0]) * math.prod(weights[0][1:]) + (top_count if len(weights) > 1 else 0)
    return top_count


def net_totals(net: caffe_pb2.NetParameter, assumed: Mapping[str, Sequence[Shape]] | None = None) -> Totals:
    """Build ``net`` (TRAIN phase) and total it. Raises EngineError (or ValueError) saying why not.

    ``assumed``: data layer name -> the top shapes the canvas assumes for it (its data is absent);
    such a layer is built as an Input of those shapes.
    """
    copy = data_shapes.as_inputs(net, assumed or {})
    for param in copy.layer:  # a mean file that is not here changes no total (the canvas warns)
        if data_shapes.reads_source(param) and data_shapes.mean_file_shape(param)[1]:
            param.transform_param.ClearField("mean_file")
    _constant_fillers(copy)
    built = Net(copy, phase=caffe_pb2.TRAIN)
    flops = 0
    for layer, bottom, top in zip(built.layers, built.bottom_vecs, built.top_vecs):
        flops += layer_flops(
            layer.type, [b.shape for b in bottom], [t.shape for t in top], [w.shape for w in layer.blobs]
        )
    return Totals(
        blobs=sum(blob.count() for blob in built.blob_list),
        params=sum(blob.count() for blob in built.learnable_params),
        flops=flops,
        layers=len(built.layers),
    )


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


__all__ = ["EngineError", "Totals", "describe_failure", "human", "layer_flops", "net_totals"]
