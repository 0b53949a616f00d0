"""A deploy net derived from a train_val net, as DIGITS derives one. Qt-free.

In the TEST phase's layers: the data layers become one ``Input`` whose tops are the data blobs the
net reads (the label goes), shaped as the TEST data is (crop size, channels) with batch 1 unless a
shape is given; ``Accuracy`` and loss layers go; the main ``SoftmaxWithLoss`` (the largest
``loss_weight``, the last of equals) becomes ``Softmax`` with top ``prob``. Other SoftmaxWithLoss
layers are auxiliary heads (GoogLeNet's ``loss1``/``loss2``): they go with the layers that fed only
them, as in BVLC's hand-written GoogLeNet deploy net. Every other layer is kept as it is.

The transform travels with the net: the TEST data layer's ``transform_param`` (mean file or values,
scale, crop) is kept on the Input layer, a field Caffe's Input ignores, so the file still runs in
Caffe and ``preprocess.from_net`` can preprocess images as the data layer did. A relative
``mean_file`` is rewritten relative to the folder the deploy net is written to.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from engine import data_shapes, relative_paths
from engine.blob import Blob
from engine.errors import EngineError
from engine.layers import create_layer, find_layer_class
from engine.netstate import filter_net
from proto import caffe_pb2

Shape = tuple[int, ...]
LayerParameter = caffe_pb2.LayerParameter
PROB = "prob"


class DeployError(EngineError):
    """The net cannot be turned into a deploy net (the message says which layer and why)."""


@dataclass
class Deploy:
    net: caffe_pb2.NetParameter
    inputs: dict[str, Shape]  # input blob -> shape, in order
    output: str | None  # the class probabilities ("prob"), or None when the net has no softmax head
    notes: list[str] = field(default_factory=list)


def is_data_layer(layer: LayerParameter) -> bool:
    cls = find_layer_class(layer.type)
    return not layer.bottom and cls is not None and cls.family == "data"


def is_loss_or_accuracy(layer: LayerParameter) -> bool:
    return layer.type == "Accuracy" or layer.type.endswith("Loss")


def is_deploy(net: caffe_pb2.NetParameter) -> bool:
    """True when the net needs no derivation: no source-reading data layer and no loss/accuracy."""
    return not any(data_shapes.reads_source(l) or is_loss_or_accuracy(l) for l in net.layer)


def derive(
    train_val: caffe_pb2.NetParameter,
    net_path: str | os.PathLike[str] | None = None,
    input_shape: Shape | None = None,
    out_path: str | os.PathLike[str] | None = None,
) -> Deploy:
    """The deploy net of ``train_val`` (read from ``net_path``, whose folder relative data paths
    are found from). ``input_shape`` replaces the first input's shape; ``out_path`` is where the
    net will be written (a relative mean file is given relative to it)."""
    state = caffe_pb2.NetState(phase=caffe_pb2.TEST)
    net = filter_net(train_val, state)
    layers = list(net.layer)
    data = [l for l in layers if is_data_layer(l)]
    dropped = {i for i, l in enumerate(layers) if is_data_layer(l) or is_loss_or_accuracy(l)}
    heads = [i for i, l in enumerate(layers) if l.type == "SoftmaxWithLoss"]
    main = max(heads, key=lambda i: (_loss_weight(layers[i]), i)) if heads else None
    auxiliary = _auxiliary_branches(layers, [i for i in heads if i != main], dropped)
    kept = [i for i in range(len(layers)) if i not in dropped | auxiliary or i == main]
    consumed = {b for i in kept for b in (layers[i].bottom[:1] if i == main else layers[i].bottom)}
    inputs = _input_shapes(data, layers, consumed, net_path, input_shape)

    out = caffe_pb2.NetParameter()
    out.CopyFrom(net)
    del out.layer[:]
    out.ClearField("state")
    if inputs:
        _add_input(out, inputs, data, net_path, out_path)
    notes: list[str] = []
    for i in kept:
        layer = out.layer.add()
        layer.CopyFrom(layers[i])
        layer.ClearField("include")
        layer.ClearField("exclude")
        if i == main:
            _as_softmax(layer, {l.name for l in layers})
    produced = set(inputs) | {t for l in out.layer for t in l.top}
    for layer in list(out.layer):
        missing = [b for b in layer.bottom if b not in produced]
        if missing and not layer.top:  # a Silence of the label: nothing to keep it for
            out.layer.remove(layer)
        elif missing:
            raise DeployError(
                f"layer '{layer.name}' reads '{missing[0]}', which only the data or loss layers give: "
                "a deploy net has no source for it"
            )
    skipped = [layers[i].name for i in sorted(auxiliary)]
    if skipped:
        notes.append(f"auxiliary heads left out: {', '.join(skipped)}")
    return Deploy(out, inputs, PROB if main is not None else None, notes)


def _loss_weight(layer: LayerParameter) -> float:
    return float(layer.loss_weight[0]) if len(layer.loss_weight) else 1.0


def _consumers(layers: Sequence[LayerParameter], index: int) -> list[int]:
    """The layers after ``index`` that read one of its tops (in-place rewrites included)."""
    tops = set(layers[index].top)
    return [j for j in range(index + 1, len(layers)) if tops & set(layers[j].bottom)]


def _auxiliary_branches(layers: Sequence[LayerParameter], heads: list[int], dropped: set[int]) -> set[int]:
    """The auxiliary heads and every layer whose outputs go only to them (or to dropped layers)."""
    gone = set(heads)
    changed = bool(gone)
    while changed:
        changed = False
        for i in range(len(layers) - 1, -1, -1):
            if i in gone or i in dropped:
                continue
            readers = _consumers(layers, i)
            if (
                readers
                and all(j in gone or j in dropped for j in readers)
                and any(j in gone for j in readers)
            ):
                gone.add(i)
                changed = True
    return gone


def _as_softmax(layer: LayerParameter, names: set[str]) -> None:
    axis = layer.softmax_param if layer.HasField("softmax_param") else None
    scores = layer.bottom[0]
    layer.Clear()
    layer.name = PROB if PROB not in names else f"{PROB}_softmax"
    layer.type = "Softmax"
    layer.bottom.append(scores)
    layer.top.append(PROB)
    if axis is not None:
        layer.softmax_param.CopyFrom(axis)


def _input_shapes(
    data: list[LayerParameter],
    layers: Sequence[LayerParameter],
    consumed: set[str],
    net_path: str | os.PathLike[str] | None,
    given: Shape | None,
) -> dict[str, Shape]:
    shapes: dict[str, Shape] = {}
    for layer in data:
        wanted = [t for t in layer.top if t in consumed]
        if not wanted:
            continue
        tops = _data_top_shapes(layer, layers, net_path)
        for top, shape in zip(layer.top, tops):
            if top not in wanted:
                continue
            if shape is None and given is None:
                raise DeployError(
                    f"layer '{layer.name}': the shape of '{top}' is unknown (its source cannot be read and "
                    "its fields do not give it): give --input-shape N,C,H,W"
                )
            shapes[top] = tuple(shape) if shape is not None else tuple(given or ())
    names = list(shapes)
    if given is not None and names:
        shapes[names[0]] = tuple(given)
    batch = given[0] if given is not None else 1
    return {name: (batch, *shape[1:]) for name, shape in shapes.items()}


def _data_top_shapes(
    layer: LayerParameter, layers: Sequence[LayerParameter], net_path: str | os.PathLike[str] | None
) -> list[Shape | None]:
    """The TEST data layer's top shapes: read from its source where it can be, else assumed from
    its fields or a deploy net beside the file (engine.data_shapes)."""
    param = LayerParameter()
    param.CopyFrom(layer)
    param.phase = caffe_pb2.TEST
    relative_paths.absolutize_data_paths(param, net_path)
    tops = [Blob((), np.float32) for _ in param.top]
    try:
        instance = create_layer(param)
        try:
            instance.setup([], tops)
        finally:
            close = getattr(instance, "close", None)
            if callable(close):
                close()
        return [tuple(b.shape) for b in tops]
    except Exception:
        hints = data_shapes.Hints(net_path=os.fspath(net_path) if net_path else None)
        assumed = data_shapes.assume(param, caffe_pb2.TEST, hints, layers)
        if assumed is None:
            return [None] * len(param.top)
        return list(assumed.tops)


def _add_input(
    out: caffe_pb2.NetParameter,
    inputs: dict[str, Shape],
    data: list[LayerParameter],
    net_path: str | os.PathLike[str] | None,
    out_path: str | os.PathLike[str] | None,
) -> None:
    layer = out.layer.add()
    first = next(l for l in data if set(l.top) & set(inputs))
    layer.name = first.name
    layer.type = "Input"
    for name, shape in inputs.items():
        layer.top.append(name)
        layer.input_param.shape.add().dim.extend(shape)
    transform = first.transform_param
    if transform.ByteSize():
        layer.transform_param.CopyFrom(transform)
        if transform.HasField("mean_file"):
            layer.transform_param.mean_file = _mean_path(transform.mean_file, net_path, out_path)


def _mean_path(
    given: str, net_path: str | os.PathLike[str] | None, out_path: str | os.PathLike[str] | None
) -> str:
    """The mean file as the deploy net should name it: relative to the deploy net's folder when
    it is found, absolute when given so, else as the train_val net gave it."""
    if os.path.isabs(given) or net_path is None:
        return given
    found = relative_paths.find(given, net_path, cwd_first=True)
    if found is None:
        return given
    if out_path is None:
        return str(found.path)
    return os.path.relpath(found.path, os.path.dirname(os.path.abspath(out_path)))
