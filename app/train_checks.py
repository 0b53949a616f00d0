"""What Train checks before it starts: a loss to minimise (else it refuses, saying what to add) and
data that is more than Input layers' zeros (else it warns). Qt-free.
"""

from __future__ import annotations

from engine.layers.base import LossLayer
from engine.layers.registry import layer_class
from engine.netstate import filter_net, make_state
from proto import caffe_pb2

DATA_TYPES = frozenset(
    {"Data", "ImageData", "HDF5Data", "MemoryData", "WindowData", "DummyData", "Python", "AnnotatedData"}
)


def _is_loss(layer: caffe_pb2.LayerParameter) -> bool:
    if layer.loss_weight:
        return any(weight != 0 for weight in layer.loss_weight)
    try:
        return issubclass(layer_class(layer.type), LossLayer)
    except Exception:  # an unknown type: the net's own problems say so
        return layer.type.endswith("Loss")


def train_net(net: caffe_pb2.NetParameter) -> caffe_pb2.NetParameter:
    state = make_state(caffe_pb2.TRAIN, net.state.level, net.state.stage)
    try:
        return filter_net(net, state)
    except Exception:  # include and exclude together: the engine names it when the run starts
        return net


def missing_loss(net: caffe_pb2.NetParameter) -> str | None:
    """Why Train cannot start on ``net`` (no loss in its TRAIN phase, with what to add), or None."""
    train = train_net(net)
    if any(_is_loss(layer) for layer in train.layer):
        return None
    name = net.name or "this net"
    return (
        f"The TRAIN phase of {name} has no loss output, so there is nothing to minimise "
        "(a deploy net?). Add a loss layer such as SoftmaxWithLoss fed by the last layer's output "
        "and a label blob (from a data layer), or give a layer a loss_weight."
    )


def only_input_data(net: caffe_pb2.NetParameter) -> str | None:
    """A warning when the TRAIN phase's data comes only from Input layers (they hold zeros)."""
    types = {layer.type for layer in train_net(net).layer}
    if "Input" in types and not types & DATA_TYPES:
        return (
            "The data comes only from Input layers: they feed zeros unless a script fills them, "
            "so this run learns nothing from data"
        )
    return None
