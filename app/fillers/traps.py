"""Warnings for the classic initialisation mistakes, in words a newcomer can act on.

Qt-free. Only what is known to hurt: weights that start all equal (every unit of the layer then
computes the same thing and receives the same gradient, so they never become different), and a
spread far from what the fan-in calls for (each such layer scales the signal by that factor).
"""

from __future__ import annotations

import math

from engine.fillers import fans
from engine.layers import find_layer_class
from proto import caffe_pb2

FAR = 3.0  # how many times too small or too large a spread is before we say so


def traps(layer_type: str, role: str, filler: caffe_pb2.FillerParameter, shape: tuple[int, ...]) -> list[str]:
    kind = filler.type
    cls = find_layer_class(layer_type)
    family = cls.family if cls is not None else ""
    weights = role == "weights" and family == "vision"  # a weight matrix or kernel bank
    # A recurrent layer's matrices break symmetry the same way; its gates are not ReLUs, so no spread rule.
    equal_matters = weights or (role == "weights" and family == "recurrent")
    found = []
    if equal_matters and (kind == "constant" or (kind == "uniform" and filler.min == filler.max)):
        value = filler.value if kind == "constant" else filler.min
        start = "All weights start at 0" if value == 0 else f"All weights start equal ({value:g})"
        found.append(
            f"{start}: every output unit computes the same thing and gets the same gradient, "
            "so they never become different (symmetry is never broken). Use xavier or msra."
        )
    if weights and kind in ("gaussian", "uniform") and len(shape) >= 2:
        found += _spread(kind, filler, shape)
    if role == "bias" and kind in ("xavier", "msra", "positive_unitball"):
        found.append(
            f"{kind} on a bias reads its fan from the bias itself (n = 1): biases usually start constant."
        )
    if kind == "bilinear" and layer_type != "Deconvolution":
        found.append(
            "bilinear is meant for a Deconvolution that upsamples (group = channels, lr_mult 0, no bias)."
        )
    return found


def _spread(kind: str, filler: caffe_pb2.FillerParameter, shape: tuple[int, ...]) -> list[str]:
    fan_in = fans(shape)[0]
    if kind == "gaussian":
        std, what = filler.std, f"std {filler.std:g}"
        if filler.sparse >= 0:
            std *= math.sqrt(filler.sparse / shape[0])
            what = f"the effective std {std:.3g} (sparse {filler.sparse})"
    else:
        std = (filler.max - filler.min) / math.sqrt(12)
        what = f"std {std:.3g} (uniform [{filler.min:g}, {filler.max:g}])"
    target = math.sqrt(2 / fan_in)
    if std <= 0 or 1 / FAR <= std / target <= FAR:
        return []
    factor = target / std if std < target else std / target
    trend = "shrinks" if std < target else "grows"
    return [
        f"{what[0].upper()}{what[1:]} is {factor:.1f}× {'smaller' if std < target else 'larger'} than "
        f"√(2/fan_in) = {target:.3g} (fan_in {fan_in}), the spread that keeps a ReLU net's signal steady: "
        f"each layer like this {trend} activations and gradients about {factor:.0f}×. msra picks it for you."
    ]
