"""Caffe's layers, one per module, registered under their prototxt type strings on import.

The package doubles as pycaffe's ``caffe.layers`` net-spec factory: an attribute spelled like a
layer type (``L.Convolution``, ``L.ReLU``) that is not one of the names below is handed to
:data:`engine.pycaffe.net_spec.layers`, so ``from engine import layers as L`` writes nets as pycaffe does.
"""

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from engine.layers.base import Layer, LossLayer, NeuronLayer
from engine.layers.registry import create_layer, find_layer_class, layer_class, layer_types, register_layer

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in ("base", "registry") and not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")


def __getattr__(name: str) -> Callable[..., Any]:
    # Only CamelCase names: dunder and lower-case look-ups (import machinery, submodules) stay errors.
    if name[:1].isupper():
        from engine.pycaffe.net_spec import layers as net_spec_layers

        return getattr(net_spec_layers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Layer",
    "LossLayer",
    "NeuronLayer",
    "create_layer",
    "find_layer_class",
    "layer_class",
    "layer_types",
    "register_layer",
]
