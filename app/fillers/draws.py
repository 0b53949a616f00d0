"""The initial parameters exactly as ``main.py fill`` draws them, for the panel's shapes and previews.

Qt-free. ``initialise(net, phase, seed)`` builds the phase's net with the engine's fillers drawing
from a generator seeded with ``seed``, as ``engine.cli.fill.initial_parameters`` does for ``--phase P
--seed S``:
the blobs it returns are the very arrays ``fill`` writes to its .npz (keys ``LAYER/INDEX``). One
build gives both the shapes (Caffe's shape inference) and the values: a layer's draws depend on
every filler run before it, so no blob can be drawn alone and still match ``fill``.

Only the layers up to the one shown are built (``upto``): the values of a layer do not depend on
the layers after it.

The draws come from ``engine.rng.seeded(seed)``: generators of the calling thread's own, so a
preview neither disturbs nor depends on a training run's or the GUI's draws.

A data layer whose source is not here (the LMDB of a downloaded net) is built as an Input of the
shapes the canvas assumes for it (``assumed``), so every parameter still gets its shape and its
draw. A data layer draws its prefetch seed as it is built: that draw is made in its place, so the
values are the ones ``fill`` writes once the data is there (when the data layers come before the
first layer with parameters, as in every net we know; else ``Initial.same_as_fill`` is False).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.fillers import budget
from app.fillers.slots import slots
from engine import pymodules, rng
from engine.data_shapes import as_inputs, reads_source
from engine.errors import EngineError
from engine.net import Net
from engine.netstate import layer_included, make_state
from proto import caffe_pb2


@dataclass
class Initial:
    """A net's parameter blobs as its fillers draw them for one phase and seed."""

    phase: int
    seed: int
    upto: int = -1  # the last document layer built: later ones were left out (they draw afterwards)
    blobs: dict[int, list[np.ndarray]] = field(default_factory=dict)  # document layer index -> blobs
    error: str | None = None  # why the net could not be built (then ``blobs`` is empty)
    assumed: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)  # data layer -> its tops
    same_as_fill: bool = True  # False: the assumed inputs shifted the draws (a data layer came late)

    def covers(self, index: int) -> bool:
        return index <= self.upto

    def shapes(self, index: int) -> list[tuple[int, ...]] | None:
        arrays = self.blobs.get(index)
        return None if arrays is None else [a.shape for a in arrays]


def net_layer_index(net: Net, param: caffe_pb2.NetParameter, index: int, phase: int) -> int | None:
    """Where document layer ``index`` sits in ``net`` built for ``phase``; None if the phase drops it."""
    state = make_state(phase, param.state.level, param.state.stage)
    try:
        if not layer_included(param.layer[index], state):
            return None
        name = param.layer[index].name
        before = sum(
            1 for layer in param.layer[:index] if layer.name == name and layer_included(layer, state)
        )
    except EngineError:
        return None
    matches = [i for i, n in enumerate(net.layer_names) if n == name]
    return matches[before] if before < len(matches) else None


def build(param: caffe_pb2.NetParameter, phase: int, seed: int, stand_ins: int = 0) -> Net:
    """The net as ``main.py fill`` builds it (host arrays, float32), fillers seeded with ``seed``;
    ``stand_ins``: data layers built as Inputs, whose seed draws are made first in their place."""
    with rng.seeded(seed):
        for _ in range(stand_ins):
            rng.host().integers(2**63)  # what BasePrefetchingDataLayer draws at its setup
        return Net(param, phase=phase, xp=np)


def unassumed_sources(
    param: caffe_pb2.NetParameter, phase: int, assumed: Mapping[str, Sequence[tuple[int, ...]]]
) -> list[str]:
    """The phase's data layers that read a source and have no assumed shapes: the ones to type."""
    state = make_state(phase, param.state.level, param.state.stage)
    found = []
    for layer in param.layer:
        try:
            included = layer_included(layer, state)
        except EngineError:
            continue
        if included and reads_source(layer) and layer.name not in assumed:
            found.append(layer.name)
    return found


def with_assumed_inputs(
    param: caffe_pb2.NetParameter, phase: int, assumed: Mapping[str, Sequence[tuple[int, ...]]]
) -> tuple[caffe_pb2.NetParameter, dict[str, list[tuple[int, ...]]], int, bool]:
    """``param`` with the phase's data layers named in ``assumed`` as Inputs; what was assumed, how
    many seed draws they would have made, and whether those all come before any filler draws."""
    state = make_state(phase, param.state.level, param.state.stage)
    used: dict[str, list[tuple[int, ...]]] = {}
    draws, late, filled = 0, False, False
    for layer in param.layer:
        try:
            included = layer_included(layer, state)
        except EngineError:
            continue
        if not included:
            continue
        shapes = assumed.get(layer.name)
        if shapes is not None and reads_source(layer) and len(shapes) == len(layer.top):
            used[layer.name] = [tuple(s) for s in shapes]
            draws += 1
            late = late or filled
        elif slots(layer):
            filled = True
    if not used:
        return param, {}, 0, True
    return as_inputs(param, used), used, draws, not late


def initialise(
    param: caffe_pb2.NetParameter,
    phase: int,
    seed: int,
    upto: int | None = None,
    module_dirs: Sequence[str] = (),
    assumed: Mapping[str, Sequence[tuple[int, ...]]] | None = None,
) -> Initial:
    """The parameters as ``fill`` draws them; with ``upto``, only of document layers 0..upto.

    ``module_dirs``: where Python layers' modules are imported from first (the net's folder).
    ``assumed``: data layer name -> top shapes for the layers whose source is not here.

    Layers draw in order, so leaving out the ones after ``upto`` changes none of the values drawn
    before: selecting conv1 of a net with a 100M-value fc6 does not wait for fc6.
    """
    if upto is not None and upto < len(param.layer) - 1:
        head = caffe_pb2.NetParameter()
        head.CopyFrom(param)
        del head.layer[upto + 1 :]
        param = head
    result = Initial(phase, seed, upto=len(param.layer) - 1)
    built_from, result.assumed, stand_ins, result.same_as_fill = with_assumed_inputs(
        param, phase, assumed or {}
    )
    try:
        params, _blobs = budget.values(built_from, phase, module_dirs)  # the blobs stay untouched zeros
        refused = budget.refusal(params, 4, "Drawing the parameters up to this layer")
        if refused is not None:
            result.error = f"{refused}; `main.py fill` draws them without the window"
            return result
        with pymodules.importing_from(module_dirs, pymodules.module_names(param)):
            net = build(built_from, phase, seed, stand_ins)
    except Exception as e:  # any layer's refusal: the panel shows it and keeps the last shapes
        result.error = str(e) or type(e).__name__
        return result
    try:
        for index in range(len(param.layer)):
            at = net_layer_index(net, param, index, phase)
            if at is not None:
                result.blobs[index] = [np.asarray(blob.data) for blob in net.layers[at].blobs]
    finally:
        close(net)
    return result


def close(net: Net) -> None:
    """Stop any data layer's prefetch thread (forwarding a batch starts one)."""
    for layer in net.layers:
        closer = getattr(layer, "close", None)
        if callable(closer):
            closer()
