"""What our schema (BVLC master's) has that Caffe 1.0 does not, and which nets and solvers use it.

Qt-free. ``proto/caffe.proto`` is a superset of the schema Caffe 1.0 shipped with (the conda and
apt builds most people run). A prototxt that sets any field below is refused by 1.0's text parser
(``Message type "caffe.X" has no field named "y"``); a layer of a type below by its layer registry
(``Unknown layer type: Clip``). Everything here still trains in this engine: these are warnings.

Where the facts come from (the stored BVLC/caffe sources):

- the 1.0 schema: ``src/caffe/proto/caffe.proto`` at BVLC/caffe c9f71bd6b22f, a version from
  between the NCCL merge (Jan 2017: it has ``layer_wise_reduce = 41``) and PR #3855 (InfogainLoss
  ``axis``, merged by 2017-04-14, before PR #5539 "Caffe 1.0" of 2017-04-15). It says "SolverParameter
  next available ID: 42 (last added: layer_wise_reduce)" and "LayerParameter next available
  layer-specific ID: 147 (last added: recurrent_param)";
- master: the same file at BVLC/caffe dc6d3303a45e (and 25a4973528f8, identical in size): "next
  available layer-specific ID: 149 (last added: clip_param)", ``weights = 42`` after
  ``layer_wise_reduce``.

Compared message by message, field by field, enum by enum, master adds exactly what is listed
below; nothing was renumbered or removed, and no value was added to an enum 1.0 already had
(``RoundMode`` is a new enum, reachable only through ``round_mode``). InfogainLossParameter.axis is
the one field the early-2017 file lacks that 1.0 has (#3855 was merged before the release).
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.message import Message

from proto import caffe_pb2

# message -> fields added to it after Caffe 1.0, each with where it came from
FIELDS_AFTER_1_0: dict[str, dict[str, str]] = {
    "LayerParameter": {
        "swish_param": "field 147, with the Swish layer (PR #6002, opened 2017-10-20)",
        "clip_param": "field 148, with the Clip layer (2018; first proposed in PR #3791)",
    },
    "PoolingParameter": {
        "round_mode": "field 13, enum RoundMode {CEIL, FLOOR} (PR #6282, opened 2018-03-07)",
    },
    "SolverParameter": {
        "weights": "field 42, the caffemodel(s) to start from (PR #6123, opened 2017-12-21)",
    },
}

# messages and enums that do not exist in Caffe 1.0 at all
MESSAGES_AFTER_1_0: frozenset[str] = frozenset({"SwishParameter", "ClipParameter"})
ENUMS_AFTER_1_0: frozenset[str] = frozenset({"PoolingParameter.RoundMode"})
ENUM_VALUES_AFTER_1_0: dict[str, frozenset[str]] = {}  # none: no 1.0 enum gained a value

# layer type -> its own parameter field (reported once, as the type) and its origin. Every other
# type this engine registers is registered by Caffe 1.0 too (src/caffe/layers/*.cpp at 1.0).
LAYER_TYPES_AFTER_1_0: dict[str, tuple[str, str]] = {
    "Swish": ("swish_param", "swish_layer.cpp, PR #6002 (opened 2017-10-20)"),
    "Clip": ("clip_param", "clip_layer.cpp, 2018 (LayerParameter field 148, after swish_param)"),
}

SOLVER_FIELDS_AFTER_1_0: frozenset[str] = frozenset(FIELDS_AFTER_1_0["SolverParameter"])

# What the editor calls these problems (a warning kind of their own), and what it says of them.
PROBLEM_KIND = "newer"
TOOLTIP = "needs a Caffe newer than 1.0 (BVLC master)"
_AFTER = "came after Caffe 1.0"


def _set_fields(message: Message, prefix: str = "") -> Iterator[str]:
    """Dotted paths of the after-1.0 fields set anywhere inside ``message``."""
    newer = FIELDS_AFTER_1_0.get(message.DESCRIPTOR.name, {})
    for field, value in message.ListFields():
        path = f"{prefix}{field.name}"
        if field.name in newer:
            yield path
        elif field.message_type is not None and field.message_type.name != "NetParameter":  # own lines
            items = value if field.is_repeated else [value]
            for i, item in enumerate(items):
                yield from _set_fields(item, f"{path}.{i}." if field.is_repeated else f"{path}.")


def layer_notes(layer: caffe_pb2.LayerParameter) -> list[str]:
    """What in ``layer`` Caffe 1.0 lacks, one line each, without the layer's name."""
    notes = []
    own = None
    if layer.type in LAYER_TYPES_AFTER_1_0:
        own = LAYER_TYPES_AFTER_1_0[layer.type][0]
        notes.append(f"layer type {layer.type} {_AFTER}")
    notes += [f"{path} {_AFTER}" for path in _set_fields(layer) if path != own]
    return notes


def _net_lines(net: caffe_pb2.NetParameter, prefix: str = "") -> list[str]:
    lines = []
    for layer in net.layer:
        kind = f" ({layer.type})" if layer.type in LAYER_TYPES_AFTER_1_0 else ""
        lines += [f"{prefix}layer '{layer.name}'{kind}: {note}" for note in layer_notes(layer)]
    for old in net.layers:  # V1 layers: their type is an enum 1.0 knows, their params may not be
        lines += [f"{prefix}layer '{old.name}': {path} {_AFTER}" for path in _set_fields(old)]
    return lines


def _solver_lines(solver: caffe_pb2.SolverParameter) -> list[str]:
    lines = [f"solver: {path} {_AFTER}" for path in _set_fields(solver)]
    if solver.snapshot and not solver.HasField("snapshot_prefix"):
        # PR #6123 also gave snapshot_prefix a default; 1.0 stops instead ("In solver params,
        # snapshot is specified but snapshot_prefix is not").
        lines.append("solver: snapshot without snapshot_prefix: a default prefix came after Caffe 1.0")
    for name in ("net_param", "train_net_param"):
        if solver.HasField(name):
            lines += _net_lines(getattr(solver, name), f"solver: {name}: ")
    for i, net in enumerate(solver.test_net_param):
        lines += _net_lines(net, f"solver: test_net_param.{i}: ")
    return lines


def newer_than_1_0(message: Message) -> list[str]:
    """Everything set in a NetParameter, SolverParameter or LayerParameter that Caffe 1.0 refuses.

    One human line each, e.g. ``layer 'act' (Clip): layer type Clip came after Caffe 1.0``,
    ``layer 'pool1': pooling_param.round_mode came after Caffe 1.0``, ``solver: weights came after
    Caffe 1.0``. Fields left at their defaults (not set) are never reported.
    """
    if isinstance(message, caffe_pb2.NetParameter):
        return _net_lines(message)
    if isinstance(message, caffe_pb2.SolverParameter):
        return _solver_lines(message)
    if isinstance(message, caffe_pb2.LayerParameter):
        return [f"layer '{message.name}': {note}" for note in layer_notes(message)]
    return [f"{path} {_AFTER}" for path in _set_fields(message)]
