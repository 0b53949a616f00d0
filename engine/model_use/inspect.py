"""One image through a model, layer by layer, as DIGITS' "Classify One" shows it: the top
classes, and for every layer its activations (the first top, for this image) and its weights,
each with mean, standard deviation, minimum, maximum and a histogram. Qt-free."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.model_use import classify

BINS = 40


@dataclass(frozen=True)
class Stats:
    mean: float
    std: float
    min: float
    max: float
    counts: np.ndarray  # BINS counts over [min, max]
    edges: np.ndarray  # BINS + 1 edges

    def text(self) -> str:
        return f"mean {self.mean:.4g}  std {self.std:.4g}  min {self.min:.4g}  max {self.max:.4g}"


def stats(values: np.ndarray) -> Stats:
    data = np.asarray(values, np.float64).ravel()
    if data.size == 0:
        return Stats(0.0, 0.0, 0.0, 0.0, np.zeros(BINS, np.int64), np.linspace(0, 1, BINS + 1))
    low, high = float(data.min()), float(data.max())
    counts, edges = np.histogram(data, BINS, (low, high) if high > low else (low - 0.5, high + 0.5))
    return Stats(float(data.mean()), float(data.std()), low, high, counts, edges)


@dataclass
class LayerLook:
    name: str
    type: str
    top: str
    activation: np.ndarray  # this image's part of the first top: (C, H, W), (D,), ...
    activation_stats: Stats
    weights: list[np.ndarray] = field(default_factory=list)
    weight_stats: list[Stats] = field(default_factory=list)


@dataclass
class Inspection:
    probabilities: np.ndarray  # (C,)
    layers: list[LayerLook]

    def top(self, k: int = 5) -> list[tuple[int, float]]:
        return classify.top_k(self.probabilities, k)

    def layer(self, name: str) -> LayerLook | None:
        return next((look for look in self.layers if look.name == name), None)


def inspect(model: classify.Model, image: np.ndarray) -> Inspection:
    """``image`` (H x W x K in [0, 1]) through the model's centre crop; every layer but the Splits
    Caffe inserts, in order."""
    net = model.classifier
    probabilities = classify.predict(model, [image], oversample=False)[0]
    layers = []
    tops = net.top_names
    params = net.params
    for name, layer in zip(net._layer_names, net.layers):
        if layer.type == "Split" or not tops.get(name):
            continue
        top = tops[name][0]
        activation = np.array(net.blobs[top].data[0], np.float32)
        weights = [np.array(b.data, np.float32) for b in params[name]] if name in params else []
        layers.append(
            LayerLook(
                name, layer.type, top, activation, stats(activation), weights, [stats(w) for w in weights]
            )
        )
    return Inspection(np.asarray(probabilities, np.float64), layers)
