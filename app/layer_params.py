"""Which ``*_param`` messages of a LayerParameter a layer type reads: what its engine class declares.

Qt-free. A type nobody registered reads none, so every message set on it counts as stray.
"""

from __future__ import annotations

from engine.layers import find_layer_class
from proto import caffe_pb2

# The fields every layer has, in the order the inspector shows them.
IDENTITY_FIELDS = ("name", "type", "bottom", "top")
LEARNING_FIELDS = ("param", "loss_weight", "propagate_down")
RULE_FIELDS = ("phase", "include", "exclude")
COMMON_FIELDS = IDENTITY_FIELDS + LEARNING_FIELDS + RULE_FIELDS


def param_fields(layer_type: str) -> tuple[str, ...]:
    """The ``*_param`` field names ``layer_type`` reads, most specific first (maybe none)."""
    cls = find_layer_class(layer_type)
    return cls.params if cls is not None else ()


def stray_params(layer: caffe_pb2.LayerParameter) -> list[str]:
    """``*_param`` messages set on ``layer`` that its type never reads (left from an old type)."""
    wanted = set(param_fields(layer.type))
    return [f.name for f, _ in layer.ListFields() if f.name.endswith("_param") and f.name not in wanted]
