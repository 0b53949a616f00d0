"""Caffe's layers, one per module, registered under their prototxt type strings on import."""

import importlib
import pkgutil

from engine.layers.base import Layer, LossLayer, NeuronLayer
from engine.layers.registry import create_layer, layer_class, layer_types, register_layer

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in ("base", "registry") and not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "Layer",
    "LossLayer",
    "NeuronLayer",
    "create_layer",
    "layer_class",
    "layer_types",
    "register_layer",
]
