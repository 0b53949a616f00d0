"""A filler setting in a few words, and putting it into a net's weight fillers.

The spelling (the command line's ``--variant NAME=SPEC`` and the dialog's presets):

- ``TYPE [FIELD=VALUE ...]``: ``gaussian std=0.01``, ``uniform min=-0.5 max=0.5``, ``msra
  variance_norm=FAN_OUT``; the fields are the FillerParameter's, as its prototxt names them.
- a bare number after the type sets the field the type is mostly given by: ``constant 0``
  (value), ``gaussian 0.01`` (std), ``uniform -0.5 0.5`` or ``uniform [-0.5,0.5]`` (min and max);
  type names and enum values are read in any case (``XAVIER``, ``variance_norm=fan_out``);
- prototxt text, as inside a ``weight_filler { }``: ``type: "gaussian" std: 0.01``;
- ``as written``: the net's own fillers, untouched.

A variant's filler goes into every weight filler (``weight_filler``, a Scale's ``filler``, PReLU's
``filler``, ...: each learnable blob whose role is weights) of the chosen layers (all by default);
biases keep the net's own. Unknown types, fields and values are SpecError, one line naming them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from google.protobuf import text_format

from engine.errors import EngineError
from engine.fillers import filler_fields, filler_problems, filler_types
from engine.layers import find_layer_class
from proto import caffe_pb2

FillerParameter = caffe_pb2.FillerParameter
AS_WRITTEN = "as written"

# The dialog's and the guide's presets: a label and its spec (DIGITS's weight-init example, plus
# the net as written). "constant 0" is what Caffe gives a weight_filler left unset.
PRESETS: dict[str, str] = {
    "constant 0 (Caffe's default)": "constant 0",
    "gaussian std 0.01": "gaussian std=0.01",
    "uniform [-0.5, 0.5]": "uniform min=-0.5 max=0.5",
    "uniform [0, 1]": "uniform min=0 max=1",
    "xavier": "xavier",
    "msra": "msra",
    "as written": AS_WRITTEN,
}
_BARE = {"constant": ("value",), "gaussian": ("std",), "uniform": ("min", "max"), "positive_unitball": ()}


_INTERVAL = re.compile(r"\[\s*([^\s,\[\]]+)\s*,\s*([^\s,\[\]]+)\s*\]")


class SpecError(EngineError):
    """A filler spec or a layer list that cannot be used; ``str()`` is the one line to show."""


def parse(spec: str) -> FillerParameter | None:
    """The FillerParameter ``spec`` spells, or None for ``as written``."""
    text = " ".join(spec.split())
    if not text:
        raise SpecError("empty filler (give a type such as xavier, or 'as written')")
    if text.lower() in (AS_WRITTEN, "as-written", "as_written"):
        return None
    if ":" in text:
        filler = _from_prototxt(text)
    else:
        text = _INTERVAL.sub(r" \1 \2 ", text)  # uniform [0,1] -> uniform 0 1
        filler = _from_words(text.split())
    problems = filler_problems(filler)
    if problems:
        raise SpecError(f"filler '{spec}': {problems[0]}")
    return filler


def _from_prototxt(text: str) -> FillerParameter:
    try:
        filler = text_format.Parse(text, FillerParameter())
    except text_format.ParseError as exc:
        raise SpecError(f"filler '{text}': {exc}") from None
    if not filler.type or filler.type not in filler_types():
        raise SpecError(f"filler '{text}': unknown type '{filler.type}' (known: {', '.join(filler_types())})")
    return filler


def _from_words(words: list[str]) -> FillerParameter:
    kind, rest = words[0], words[1:]
    if kind.lower() in filler_types():  # Caffe's types are lower case
        kind = kind.lower()
        words = [kind, *rest]
    if kind not in filler_types():
        raise SpecError(f"unknown filler '{kind}' (known: {', '.join(filler_types())}, or 'as written')")
    filler = FillerParameter(type=kind)
    fields = filler_fields()[kind]
    bare = [w for w in rest if "=" not in w]
    if bare and len(bare) != len(_BARE.get(kind, ())):
        names = " ".join(_BARE.get(kind, ())) or "no bare values"
        raise SpecError(f"filler '{' '.join(words)}': {kind} takes {names}; give FIELD=VALUE instead")
    for name, value in zip(_BARE.get(kind, ()), bare):
        _set(filler, name, value, words)
    for word in (w for w in rest if "=" in w):
        name, _, value = word.partition("=")
        if name not in fields:
            known = ", ".join(fields) or "none"
            raise SpecError(f"filler '{' '.join(words)}': {kind} has no field '{name}' (its fields: {known})")
        _set(filler, name, value, words)
    return filler


def _set(filler: FillerParameter, name: str, value: str, words: list[str]) -> None:
    field = FillerParameter.DESCRIPTOR.fields_by_name[name]
    try:
        if field.enum_type is not None:
            setattr(filler, name, field.enum_type.values_by_name[value.upper()].number)
        elif field.cpp_type in (field.CPPTYPE_INT32, field.CPPTYPE_INT64):
            setattr(filler, name, int(value))
        else:
            setattr(filler, name, float(value))
    except (KeyError, ValueError):
        raise SpecError(f"filler '{' '.join(words)}': '{value}' is not a value for {name}") from None


def describe(filler: FillerParameter | None) -> str:
    """The spec that ``parse`` reads back: ``gaussian std=0.01``, ``as written``."""
    if filler is None:
        return AS_WRITTEN
    names = FillerParameter.VarianceNorm.Name
    parts = [filler.type]
    for name in filler_fields().get(filler.type, ()):
        if filler.HasField(name):
            value = getattr(filler, name)
            parts.append(f"{name}={names(value) if name == 'variance_norm' else f'{value:g}'}")
    return " ".join(parts)


def weight_paths(layer: caffe_pb2.LayerParameter) -> list[str]:
    """The dotted paths of the filler fields that fill ``layer``'s weights (not its biases)."""
    cls = find_layer_class(layer.type)
    blobs = (cls.learnable_blobs(layer) or []) if cls is not None else []
    return list(dict.fromkeys(b.path for b in blobs if b.family == "weights" and b.path is not None))


def check_layers(net: caffe_pb2.NetParameter, names: Sequence[str]) -> None:
    """Refuse a layer name the net lacks or a layer without weights to fill."""
    by_name = {layer.name: layer for layer in net.layer}
    for name in names:
        if name not in by_name:
            raise SpecError(f"the net has no layer '{name}'")
        if not weight_paths(by_name[name]):
            raise SpecError(f"layer '{name}' ({by_name[name].type}) has no weights to fill")


def apply(net: caffe_pb2.NetParameter, filler: FillerParameter | None, layers: Sequence[str] = ()) -> None:
    """Put ``filler`` into the weight fillers of ``layers`` (every layer when empty), in place."""
    if filler is None:
        return
    for layer in net.layer:
        if layers and layer.name not in layers:
            continue
        for path in weight_paths(layer):
            holder_path, name = path.rsplit(".", 1)
            holder = layer
            for part in holder_path.split("."):
                holder = getattr(holder, part)
            getattr(holder, name).CopyFrom(filler)
