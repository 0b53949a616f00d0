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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from engine import pymodules, rng
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


def build(param: caffe_pb2.NetParameter, phase: int, seed: int) -> Net:
    """The net as ``main.py fill`` builds it (host arrays, float32), fillers seeded with ``seed``."""
    with rng.seeded(seed):
        return Net(param, phase=phase, xp=np)


def initialise(
    param: caffe_pb2.NetParameter,
    phase: int,
    seed: int,
    upto: int | None = None,
    module_dirs: Sequence[str] = (),
) -> Initial:
    """The parameters as ``fill`` draws them; with ``upto``, only of document layers 0..upto.

    ``module_dirs``: where Python layers' modules are imported from first (the net's folder).

    Layers draw in order, so leaving out the ones after ``upto`` changes none of the values drawn
    before: selecting conv1 of a net with a 100M-value fc6 does not wait for fc6.
    """
    if upto is not None and upto < len(param.layer) - 1:
        head = caffe_pb2.NetParameter()
        head.CopyFrom(param)
        del head.layer[upto + 1 :]
        param = head
    result = Initial(phase, seed, upto=len(param.layer) - 1)
    try:
        with pymodules.importing_from(module_dirs, pymodules.module_names(param)):
            net = build(param, phase, seed)
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
