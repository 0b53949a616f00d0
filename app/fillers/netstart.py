"""How the net starts: one batch forward and backward through the freshly initialised net.

Qt-free and run off the GUI thread. The net is built, seeded, as ``main.py fill`` builds it (so
the weights are the ones the panel previews), optionally with every weight filler replaced by one
filler to compare initialisations. The batch comes from the net's own data layers when they can be
read; Input layers get N(0, 1) values (labels: zeros, a valid class for every classifier loss).
A data layer whose source is not on this machine becomes an Input of the shapes the canvas and the
Initialisation tab assume for it (``assumed``), fed the same way, and the source line says so.
For every blob a layer produces (read after the in-place layers on it) it records the mean and std
of the values and, after the backward pass, the L2 norm of the gradient reaching the blob. A net
without a loss is given a random N(0, 1) gradient at its outputs. The numbers are
engine/experiments/layer_stats.py's, as the initialisation experiments read them while training.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.fillers import budget
from app.fillers.draws import close, with_assumed_inputs
from engine import pymodules, rng
from engine.experiments import filler_spec, layer_stats
from engine.layers._recurrent import RecurrentLayer
from engine.net import Net
from engine.rng import seeded
from proto import caffe_pb2

FillerParameter = caffe_pb2.FillerParameter

# The initialisations to compare: a label, and the filler put in every weight_filler (None: the net's own).
CHOICES: dict[str, FillerParameter | None] = {
    "the net's own fillers": None,
    "xavier everywhere": FillerParameter(type="xavier"),
    "msra everywhere": FillerParameter(type="msra"),
    "gaussian std 0.01 everywhere": FillerParameter(type="gaussian", std=0.01),
    "gaussian std 0.1 everywhere": FillerParameter(type="gaussian", std=0.1),
}
_WORDS = ((1e-3, "vanishes"), (0.1, "shrinks"), (10, "holds"), (1e3, "grows"), (math.inf, "explodes"))


@dataclass
class Probe:
    label: str
    names: list[str] = field(default_factory=list)  # the producing layers, in forward order
    act_mean: list[float] = field(default_factory=list)
    act_std: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)  # ||d loss / d output||, NaN where none flows
    source: str = ""  # where the batch came from
    loss: float = math.nan
    error: str | None = None


def with_weights(param: caffe_pb2.NetParameter, filler: FillerParameter | None) -> caffe_pb2.NetParameter:
    """The net to probe: ``filler`` in every weight_filler; HDF5Output silenced (a probe writes no file)."""
    net = caffe_pb2.NetParameter()
    net.CopyFrom(param)
    filler_spec.apply(net, filler)
    for layer in net.layer:
        if layer.type == "HDF5Output":  # same bottoms, nothing written
            layer.type = "Silence"
            layer.ClearField("hdf5_output_param")
    net.force_backward = True  # a gradient for every layer, even where nothing below learns
    return net


def probe(
    param: caffe_pb2.NetParameter,
    phase: int,
    seed: int,
    label: str = "",
    module_dirs: Sequence[str] = (),
    assumed: Mapping[str, Sequence[tuple[int, ...]]] | None = None,
    facts: frozenset[str] = frozenset(),
) -> Probe:
    """``module_dirs``: where the Python layers' modules are imported from first (the net's folder).
    ``assumed``: data layer name -> top shapes, for the data layers whose source is not here;
    ``facts``: those of them that read the bundled MNIST (made when training starts)."""
    result = Probe(label or "the net's own fillers")
    filler = CHOICES.get(result.label)
    built, used, stand_ins, _same = with_assumed_inputs(param, phase, assumed or {})
    try:
        params, blobs = budget.values(param, phase, module_dirs)
        # data and gradient of every weight and blob, 4 bytes each
        result.error = budget.refusal(2 * (params + blobs), 4, "One batch forward and backward")
        if result.error is not None:
            return result
        with seeded(seed), pymodules.importing_from(module_dirs, pymodules.module_names(param)):
            for _ in range(stand_ins):  # the seed draws the data layers make, as fill's stand-ins do
                rng.host().integers(2**63)
            net = Net(with_weights(built, filler), phase=phase, xp=np)
            try:
                _run(net, seed, result)
            finally:
                close(net)
    except Exception as e:
        result.error = str(e) or type(e).__name__
    if used and result.error is None:
        bundled = [name for name in used if name in facts]
        absent = [name for name in used if name not in facts]
        why = [f"{', '.join(absent)}: its data is not on this machine"] if absent else []
        why += [f"{', '.join(bundled)}: the bundled MNIST, made when training starts"] if bundled else []
        result.source = f"synthetic data of the shapes the canvas uses ({'; '.join(why)}); " + result.source
    return result


def _run(net: Net, seed: int, result: Probe) -> None:
    result.source = _feed(net, np.random.default_rng(seed))
    plotted = layer_stats.plotted_layers(net)
    result.names = [net.layer_names[i] for i in plotted]
    result.loss = net.forward_from_to()
    means, stds = layer_stats.activations(net, plotted)
    result.act_mean, result.act_std = list(means), list(stds)
    if not any(net.blob_loss_weights):
        gen = np.random.default_rng(seed + 1)
        for blob in net.output_blobs:
            blob.diff[...] = gen.standard_normal(blob.shape)
        result.source += "; no loss: the backward pass starts from a random N(0, 1) gradient at the outputs"
    net.backward()
    result.grad_norm = list(layer_stats.gradient_norms(net, plotted))


def _feed(net: Net, gen: np.random.Generator) -> str:
    """Fill the Input layers' tops; say where the batch comes from."""
    labels = {
        blob_id
        for i, layer in enumerate(net.layers)
        if layer.type.endswith("Loss") or layer.type == "Accuracy"
        for blob_id in net.bottom_id_vecs[i][1:]
    }
    # A recurrent layer's second bottom marks where sequences go on: one sequence per stream, as
    # Caffe's examples feed it (0 at the first timestep, 1 after).
    conts = {
        net.bottom_id_vecs[i][1] for i, layer in enumerate(net.layers) if isinstance(layer, RecurrentLayer)
    }
    labels, conts = _before_splits(net, labels), _before_splits(net, conts)
    fed = []
    for i, layer in enumerate(net.layers):
        if layer.type != "Input":
            continue
        for blob, blob_id in zip(net.top_vecs[i], net.top_id_vecs[i]):
            if blob_id in conts:
                blob.data[...] = 1
                blob.data[:1] = 0
            elif blob_id in labels:
                blob.data[...] = 0
            else:
                blob.data[...] = gen.standard_normal(blob.shape)
            fed.append(f"{net.blob_names[blob_id]} {'×'.join(map(str, blob.shape))}")
    sources = [
        f"{net.layer_names[i]} ({layer.type})"
        for i, layer in enumerate(net.layers)
        if not net.bottom_vecs[i] and net.top_vecs[i] and layer.type != "Input"
    ]
    parts = []
    if fed:
        parts.append("random N(0, 1) values in " + ", ".join(fed))
    if sources:
        parts.append("a batch from " + ", ".join(sources))
    return "; ".join(parts) or "no input layer"


def _before_splits(net: Net, ids: set[int]) -> set[int]:
    """``ids`` and the blobs Caffe's Split layers copied them from (a blob read twice is split)."""
    found = set(ids)
    for i in range(len(net.layers) - 1, -1, -1):
        if net.layers[i].type == "Split" and found.intersection(net.top_id_vecs[i]):
            found.update(net.bottom_id_vecs[i])
    return found


def verdict(result: Probe) -> str:
    """One line: how the signal's spread changes from the first to the last plotted layer."""
    stds = [s for s in result.act_std if s > 0]
    if result.error or len(stds) < 2:
        return ""
    ratio = stds[-1] / stds[0]
    grads = [g for g in result.grad_norm if g > 0 and math.isfinite(g)]
    word = next(w for limit, w in _WORDS if ratio < limit)
    text = f"activation std {word}: ×{ratio:.2g} from {result.names[0]} to {result.names[-1]}"
    if len(grads) >= 2:
        text += f"; gradient norm ×{grads[0] / grads[-1]:.2g} from the top back to the bottom"
    return text
