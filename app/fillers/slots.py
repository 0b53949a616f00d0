"""Which parameter blobs a layer has, which FillerParameter fills each, and what each filler reads.

Qt-free. A *slot* is one parameter blob of a layer as its engine class declares it
(``Layer.learnable_blobs``): its role ("weights", "bias", ...), the dotted path of the filler field
that fills it (``convolution_param.weight_filler``) and the filler the engine uses while that field
is unset. Blobs no filler touches (BatchNorm's statistics) have ``path=None`` and a note saying how
they start. What each filler reads is the engine's too (``Filler.fields``).
"""

from __future__ import annotations

from app.fields import get_field
from engine.fillers import filler_fields
from engine.layers import find_layer_class
from engine.layers.facts import ParamBlob as Slot
from proto import caffe_pb2

FillerParameter = caffe_pb2.FillerParameter
LayerParameter = caffe_pb2.LayerParameter

# The fields each filler reads, in the order the panel shows them.
FIELDS: dict[str, tuple[str, ...]] = filler_fields()
FILLER_TYPES = tuple(FIELDS)


def slots(layer: LayerParameter) -> list[Slot]:
    """The parameter blobs ``layer`` learns, in the order of ``layer.blobs``."""
    cls = find_layer_class(layer.type)
    return (cls.learnable_blobs(layer) or []) if cls is not None else []


def is_set(layer: LayerParameter, slot: Slot) -> bool:
    if slot.path is None:
        return False
    holder, name = slot.path.rsplit(".", 1)
    return get_field(layer, holder).HasField(name)


def effective(layer: LayerParameter, slot: Slot) -> FillerParameter | None:
    """The filler the engine will use for ``slot``: the layer's own, or the default while unset."""
    if slot.path is None:
        return None
    filler = FillerParameter()
    filler.CopyFrom(get_field(layer, slot.path) if is_set(layer, slot) else slot.default or FillerParameter())
    return filler


def with_type(old: FillerParameter, type_name: str) -> FillerParameter:
    """A ``type_name`` filler keeping the fields of ``old`` that the new type reads too."""
    new = FillerParameter(type=type_name)
    for field in FIELDS.get(type_name, ()):
        if old.HasField(field):
            setattr(new, field, getattr(old, field))
    return new


def with_field(old: FillerParameter, field: str, value: float | int) -> FillerParameter:
    new = FillerParameter()
    new.CopyFrom(old)
    new.type = old.type  # written out, so the prototxt names the filler it keeps
    setattr(new, field, value)
    return new


def describe(filler: FillerParameter) -> str:
    """``gaussian(std=0.01)``: the filler in a few words, for undo texts and captions."""
    names = caffe_pb2.FillerParameter.VarianceNorm.Name
    parts = []
    for field in FIELDS.get(filler.type, ()):
        if not filler.HasField(field):
            continue
        value = getattr(filler, field)
        parts.append(f"{field}={names(value) if field == 'variance_norm' else f'{value:g}'}")
    return f"{filler.type}({', '.join(parts)})" if parts else filler.type


__all__ = [
    "FIELDS",
    "FILLER_TYPES",
    "Slot",
    "describe",
    "effective",
    "is_set",
    "slots",
    "with_field",
    "with_type",
]
