"""Layers registered under their prototxt type strings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.errors import UnknownTypeError
from engine.layers.facts import FAMILIES

if TYPE_CHECKING:
    from engine.layers.base import Layer

_LAYERS: dict[str, type[Layer]] = {}


def register_layer(type_name: str) -> Callable[[type[Layer]], type[Layer]]:
    def decorate(cls: type[Layer]) -> type[Layer]:
        if type_name in _LAYERS and _LAYERS[type_name] is not cls:
            raise ValueError(f"layer type '{type_name}' registered twice")
        if cls.family and cls.family not in FAMILIES:
            raise ValueError(f"layer type '{type_name}': unknown family '{cls.family}' (known: {FAMILIES})")
        cls.type = type_name
        _LAYERS[type_name] = cls
        return cls

    return decorate


def layer_class(type_name: str) -> type[Layer]:
    try:
        return _LAYERS[type_name]
    except KeyError:
        known = ", ".join(sorted(_LAYERS))
        raise UnknownTypeError(f"Unknown layer type: '{type_name}' (known types: {known})") from None


def find_layer_class(type_name: str) -> type[Layer] | None:
    """The class registered for ``type_name``, or None (for describing a type, not building it)."""
    return _LAYERS.get(type_name)


def create_layer(param: Any, **kwargs: Any) -> Layer:
    """Build the layer a LayerParameter describes (Caffe's LayerRegistry::CreateLayer)."""
    return layer_class(param.type)(param, **kwargs)


def layer_types() -> list[str]:
    return sorted(_LAYERS)
