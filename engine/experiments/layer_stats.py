"""Per-layer statistics of a net after a forward and a backward pass: how the signal travels.

One point per blob a layer produces, read after the in-place layers on it (ReLU, Dropout), as
Caffe's own picture stacks those inside their producer's box: the std (and mean) of the values,
the L2 norm of the gradient reaching the blob (NaN where the net computes none), and, where the
blob is a ReLU's output, the fraction of its values that are exactly zero ("dead"). Read from
whatever the blobs hold, so "How the net starts" (one batch) and the initialisation experiments
(every iteration of a training run) show the same numbers. No Qt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine import backend
from engine.net import Net

_NOT_PLOTTED = {"Split", "Silence", "Accuracy"}


def plotted_layers(net: Net) -> list[int]:
    """The layers with a point, in forward order: those producing a blob of their own, not losses."""
    return [
        i
        for i, layer in enumerate(net.layers)
        if net.top_vecs[i]
        and layer.type not in _NOT_PLOTTED
        and not layer.loss(0)
        and net.bottom_id_vecs[i][:1] != net.top_id_vecs[i][:1]
    ]


def relu_outputs(net: Net, layers: list[int]) -> list[bool]:
    """Whether each of ``layers``' first top ends as a ReLU's output (the layer is one, or one runs
    in place on its blob)."""
    relu_tops = {net.top_id_vecs[i][0] for i, layer in enumerate(net.layers) if layer.type == "ReLU"}
    return [net.top_id_vecs[i][0] in relu_tops for i in layers]


@dataclass(frozen=True)
class Snapshot:
    """One pass's numbers, one per plotted layer."""

    act_mean: tuple[float, ...]
    act_std: tuple[float, ...]
    grad_norm: tuple[float, ...]
    dead: tuple[float, ...]  # NaN for a layer whose output is not a ReLU's


def activations(net: Net, layers: list[int]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The mean and std of each layer's first top, to some 1e-6 relative: the variance is E[x^2] -
    mean^2 from a BLAS dot in the blob's type (the statistics are taken while training, every
    iteration: ten times faster than a float64 copy), or, where that difference would cancel (a
    spread under a third of the mean), the dot of the centred values."""
    means, stds = [], []
    for i in layers:
        top = net.top_vecs[i][0].data.ravel()
        xp = backend.get_array_module(top)
        n = max(top.size, 1)
        mean = float(top.sum(dtype=np.float64)) / n
        var = float(xp.dot(top, top)) / n - mean * mean
        if var < 0.1 * mean * mean:
            centred = top - top.dtype.type(mean)
            var = float(xp.dot(centred, centred)) / n
        means.append(mean)
        stds.append(math.sqrt(max(var, 0.0)))
    return tuple(means), tuple(stds)


def gradient_norms(net: Net, layers: list[int]) -> tuple[float, ...]:
    """||d loss / d top|| for each layer's first top; NaN where the backward pass computes none."""
    norms = []
    for i in layers:
        if not net.blob_need_backward[net.top_id_vecs[i][0]]:
            norms.append(math.nan)
            continue
        diff = net.top_vecs[i][0].diff.ravel()
        xp = backend.get_array_module(diff)
        norms.append(math.sqrt(float(xp.dot(diff, diff))))  # a sum of squares: no cancellation
    return tuple(norms)


def dead_fractions(net: Net, layers: list[int], relus: list[bool]) -> tuple[float, ...]:
    """The fraction of zeros in each ReLU output among ``layers``; NaN for the others."""
    found = []
    for i, is_relu in zip(layers, relus):
        top = net.top_vecs[i][0].data
        if not is_relu or not top.size:
            found.append(math.nan)
            continue
        found.append(1 - int(backend.get_array_module(top).count_nonzero(top)) / top.size)
    return tuple(found)


def measure(net: Net, layers: list[int], relus: list[bool]) -> Snapshot:
    means, stds = activations(net, layers)
    return Snapshot(means, stds, gradient_norms(net, layers), dead_fractions(net, layers, relus))
