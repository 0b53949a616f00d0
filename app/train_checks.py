"""What Train checks before it starts: a loss to minimise (else it refuses, saying what to add) and
data that is more than Input layers' zeros (else it warns). Qt-free.

Then the traps the product can see, which Train asks about ("Train anyway"): a weight filler that
never breaks symmetry (the Initialisation tab's own rule, app/fillers/traps.py), and TRAIN and TEST
data layers that give different shapes (Caffe then stops with "Cannot share param weights ...;
shape mismatch", which ``explain_failure`` traces to the TEST net's data layer) or read different
data sets (the test accuracy then says nothing of training); and a loss that cannot learn (no weight
that learns reaches it, a softmax over one class, a base_lr of 0).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from app.fillers.slots import effective, is_set, slots
from app.fillers.traps import traps
from engine.data_shapes import Hints, reads_source
from engine.layers.base import LossLayer
from engine.layers.registry import layer_class
from engine.netstate import filter_net, make_state
from graph_view.shapes import LayerShapes, infer
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


def symmetry_traps(net: caffe_pb2.NetParameter) -> list[str]:
    """One line per TRAIN layer whose weights start all equal (an unset filler is constant 0) and
    whose output reaches another layer that learns: its units then stay alike (or, behind a ReLU,
    dead). A last layer straight into the loss is left out: each of its units gets its own gradient."""
    layers = list(train_net(net).layer)
    found = []
    for k, layer in enumerate(layers):
        for slot in slots(layer):
            filler = effective(layer, slot)
            if slot.role != "weights" or filler is None or not _feeds_a_learner(layers, k):
                continue
            said = [t for t in traps(layer.type, slot.role, filler, ()) if "symmetry" in t]
            if said:
                unset = "" if is_set(layer, slot) else " (no weight_filler: Caffe's default, constant 0)"
                found.append(f"{layer.name}{unset}: {said[0]}")
    return found


def _feeds_a_learner(layers: Sequence[caffe_pb2.LayerParameter], k: int) -> bool:
    reached = set(layers[k].top)
    for layer in layers[k + 1 :]:
        if reached.intersection(layer.bottom):
            if any(slot.role == "weights" for slot in slots(layer)):
                return True
            reached.update(layer.top)
    return False


def _data_layers(
    net: caffe_pb2.NetParameter, phase: int, hints: Hints | None
) -> list[tuple[caffe_pb2.LayerParameter, LayerShapes]]:
    state = make_state(phase, net.state.level, net.state.stage)
    filtered = filter_net(net, state)
    layers = list(filtered.layer)
    shapes = infer(layers, phase, hints=hints)
    return [(layer, s) for layer, s in zip(layers, shapes) if reads_source(layer) and layer.top]


def _dims(shape: Sequence[int] | None) -> str:
    return "×".join(map(str, shape)) if shape else "?"


def _source(layer: caffe_pb2.LayerParameter) -> str:
    for name in ("data_param", "image_data_param", "hdf5_data_param", "window_data_param"):
        if layer.HasField(name):
            return getattr(layer, name).source
    return ""


def data_pairs(
    net: caffe_pb2.NetParameter, hints: Hints | None = None
) -> list[tuple[caffe_pb2.LayerParameter, LayerShapes, caffe_pb2.LayerParameter, LayerShapes]]:
    """(TRAIN layer, its shapes, TEST layer, its shapes) for the data layers of the two phases that
    feed the same blob and are not one and the same layer."""
    try:
        train = _data_layers(net, caffe_pb2.TRAIN, hints)
        test = _data_layers(net, caffe_pb2.TEST, hints)
    except Exception:  # include and exclude together, say: the run names it when it starts
        return []
    return [
        (a, sa, b, sb)
        for a, sa in train
        for b, sb in test
        if a.top[0] == b.top[0] and a.SerializeToString() != b.SerializeToString()
    ]


def data_mismatch(net: caffe_pb2.NetParameter, hints: Hints | None = None) -> list[str]:
    """TRAIN and TEST data layers that give different image shapes, or read different data sets."""
    found = []
    for a, sa, b, sb in data_pairs(net, hints):
        top = a.top[0]
        da, db = (s.tops[0] if s.tops else None for s in (sa, sb))
        if da and db and tuple(da[1:]) != tuple(db[1:]):
            found.append(
                f"TRAIN's data layer '{a.name}' gives {top} {_dims(da)} but TEST's '{b.name}' gives "
                f"{_dims(db)}: the TEST net shares the TRAIN net's weights, whose shapes follow the "
                'input, so the run stops at "Cannot share param weights ... shape mismatch". '
                f"Make '{b.name}' read data of the same size (or change it with the TRAIN layer)."
            )
            continue
        sa_, sb_ = _source(a), _source(b)
        if a.type != b.type or os.path.dirname(sa_) != os.path.dirname(sb_):
            found.append(
                f"TRAIN's data layer '{a.name}' reads {sa_ or '(no source)'} ({a.type}) but TEST's "
                f"'{b.name}' reads {sb_ or '(no source)'} ({b.type}): unless they hold the same classes, "
                "prepared the same way, the test accuracy says nothing of what TRAIN learns "
                "(it stays at chance)."
            )
    return found


def explain_failure(message: str, net: caffe_pb2.NetParameter, hints: Hints | None = None) -> str | None:
    """What a run's error means when the product can see the cause: the TEST net's data layer
    behind Caffe's "Cannot share param weights from layer ...; shape mismatch"."""
    if "Cannot share param weights" not in message:
        return None
    for a, sa, b, sb in data_pairs(net, hints):
        da, db = (s.tops[0] if s.tops else None for s in (sa, sb))
        if da and db and tuple(da[1:]) != tuple(db[1:]):
            return (
                f"The cause is the TEST net's data layer '{b.name}': it gives {b.top[0]} {_dims(db)}, "
                f"while TRAIN's '{a.name}' gives {_dims(da)}; the weights the two nets share are shaped "
                f"by TRAIN's input. Make '{b.name}' read data of the same size."
            )
    return (
        "The TEST net builds a layer of the same name with other weight shapes than TRAIN's: most "
        "often its data layer gives inputs of another size."
    )


def loss_traps(net: caffe_pb2.NetParameter, solver: caffe_pb2.SolverParameter | None = None) -> list[str]:
    """A loss that cannot learn: nothing that learns reaches it (no weights upstream, or every one
    frozen by lr_mult 0), a SoftmaxWithLoss over a single class (always probability 1, loss 0, no
    gradient), or a solver whose base_lr is 0."""
    layers = list(train_net(net).layer)
    losses = [k for k, layer in enumerate(layers) if _is_loss(layer)]
    found = []
    if losses and not any(_learns_upstream(layers, k) for k in losses):
        names = ", ".join(layers[k].name for k in losses)
        found.append(
            f"No weight that learns reaches the loss ({names}): the layers before it have no weights, or "
            "every one has lr_mult 0, so training changes nothing. Give a layer before it weights, or an "
            "lr_mult above 0."
        )
    producers = {top: layer for layer in layers for top in layer.top}
    for k in losses:
        layer = layers[k]
        if layer.type != "SoftmaxWithLoss" or not layer.bottom:
            continue
        source = producers.get(layer.bottom[0])
        outputs = _num_output(source) if source is not None else None
        if outputs == 1:
            found.append(
                f"{layer.name} is a softmax over one class ({source.name} has num_output: 1): its "
                "probability is always 1, the loss 0 and the gradient 0. Set num_output to the number of "
                "classes."
            )
    if solver is not None and solver.HasField("base_lr") and solver.base_lr == 0:
        found.append("The solver's base_lr is 0: every update is zero. Caffe's nets start around 0.01.")
    return found


def _num_output(layer: caffe_pb2.LayerParameter) -> int | None:
    for field in ("inner_product_param", "convolution_param"):
        if layer.HasField(field):
            return getattr(layer, field).num_output
    return None


def _learns_upstream(layers: Sequence[caffe_pb2.LayerParameter], k: int) -> bool:
    """Whether a layer with weights that learn (lr_mult > 0, Caffe's default 1) feeds layer ``k``."""
    wanted = set(layers[k].bottom)
    for layer in reversed(layers[:k]):
        if not wanted.intersection(layer.top):
            continue
        if any(slot.role == "weights" for slot in slots(layer)):
            mults = [p.lr_mult if p.HasField("lr_mult") else 1.0 for p in layer.param]
            if not mults or mults[0] != 0:  # the first blob is the weights
                return True
        wanted.update(layer.bottom)
    return False


def traps_before_training(doc, hints: Hints | None = None) -> list[str]:
    """What Train asks about for ``doc`` (an app Document): the symmetry traps (not when the run
    starts from trained weights, which replace the fillers' values), a loss that cannot learn and
    the TRAIN/TEST data."""
    found = []
    if not (getattr(doc, "weights_path", None) or doc.solver.weights):
        found += symmetry_traps(doc.net)
    return found + loss_traps(doc.net, doc.solver) + data_mismatch(doc.net, hints)
