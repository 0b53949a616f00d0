"""pycaffe's net_spec: write a net as Python calls and get its NetParameter.

``L.Convolution(bottom, kernel_size=3, num_output=8)`` makes a :class:`Function` (one layer) and
returns its :class:`Top` (or a tuple of them for ``ntop=2``, or the Function itself for
``ntop=0``). Assigning tops to a :class:`NetSpec` names them; ``NetSpec.to_proto()`` (or
:func:`to_proto` on anonymous tops) walks the graph depth first and emits one LayerParameter per
Function, in the order Caffe's net_spec emits them:

- keyword names ending in ``param`` (``param``, ``transform_param``, ``loss_param``, any
  ``*_param``) are fields of the LayerParameter; any other keyword is first tried as a field of
  the type's own message (``Convolution`` -> ``convolution_param``, found from the schema by
  message name) and, failing that, as a field of the LayerParameter (``loss_weight``, ``include``,
  ``name``, ``phase``...). Types without a message of their own name (``Deconvolution``,
  ``SoftmaxWithLoss``, ``LSTM``) take their options spelled out, e.g. ``convolution_param=dict()``;
- dicts become messages, lists become repeated fields (a list of dicts, repeated messages), and a
  single value given to a repeated field becomes a one-element list;
- ``ntop=`` sets the number of tops, ``in_place=True`` makes the tops the bottoms;
- unnamed tops are called TypeN, counting per type (``Convolution1``, ``Convolution2``); a layer
  takes the name of its first top (an in-place or top-less layer that was not named gets TypeN).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from proto import caffe_pb2

__all__ = ["Function", "NetSpec", "Top", "assign_proto", "layers", "param_name_dict", "params", "to_proto"]

_Names = dict[Any, str]
_Built = OrderedDict[Any, caffe_pb2.LayerParameter]


def param_name_dict() -> dict[str, str]:
    """Map a layer type to the prefix of its ``*_param`` field: ``{"Convolution": "convolution", ...}``.

    Read from the schema: each ``xxx_param`` field of LayerParameter whose message is ``YyyParameter``
    gives ``Yyy -> xxx``.
    """
    suffix_field, suffix_type = "_param", "Parameter"
    mapping = {}
    for field in caffe_pb2.LayerParameter.DESCRIPTOR.fields:
        message = field.message_type
        if field.name.endswith(suffix_field) and message is not None and message.name.endswith(suffix_type):
            mapping[message.name[: -len(suffix_type)]] = field.name[: -len(suffix_field)]
    return mapping


def _has_field(message: Any, name: str) -> bool:
    return name in message.DESCRIPTOR.fields_by_name


def _plain(value: Any) -> Any:
    """numpy scalars as Python scalars (protobuf accepts only the latter everywhere)."""
    return value.item() if isinstance(value, np.generic) else value


def assign_proto(message: Any, name: str, value: Any) -> None:
    """Set field ``name`` of ``message`` from a Python value, recursively (see the module docstring)."""
    try:
        current = getattr(message, name)
    except AttributeError:
        raise AttributeError(f"{message.DESCRIPTOR.name} has no field '{name}'") from None
    repeated = hasattr(current, "extend")
    if isinstance(value, np.ndarray):
        value = value.tolist()  # a 0-d array becomes its scalar
    elif isinstance(value, tuple):
        value = list(value)
    if repeated and not isinstance(value, list):
        value = [value]
    if isinstance(value, list):
        if not repeated:
            raise TypeError(f"{message.DESCRIPTOR.name}.{name} is not a repeated field; got a list {value!r}")
        if value and isinstance(value[0], dict):
            for item in value:
                if not isinstance(item, dict):
                    raise TypeError(f"{message.DESCRIPTOR.name}.{name}: mixed dicts and values in {value!r}")
                element = current.add()
                for key, sub in item.items():
                    assign_proto(element, key, sub)
        else:
            current.extend(_plain(v) for v in value)
    elif isinstance(value, dict):
        if not hasattr(current, "DESCRIPTOR"):
            raise TypeError(f"{message.DESCRIPTOR.name}.{name} is not a message; got a dict {value!r}")
        for key, sub in value.items():
            assign_proto(current, key, sub)
    else:
        try:
            setattr(message, name, _plain(value))
        except AttributeError:
            raise TypeError(
                f"{message.DESCRIPTOR.name}.{name} is a message; give it as a dict, not {value!r}"
            ) from None


class Top:
    """One output blob: output ``n`` of Function ``fn``."""

    def __init__(self, fn: Function, n: int) -> None:
        self.fn = fn
        self.n = n

    def to_proto(self) -> caffe_pb2.NetParameter:
        """The NetParameter of every layer this top depends on, with generated names."""
        return to_proto(self)

    def _to_proto(self, built: _Built, names: _Names, autonames: Counter[str]) -> None:
        self.fn._to_proto(built, names, autonames)

    def __repr__(self) -> str:
        return f"<Top {self.n} of {self.fn.type_name}>"


class Function:
    """One layer: its type, its input Tops, and its keyword parameters."""

    def __init__(self, type_name: str, inputs: tuple[Any, ...], params: dict[str, Any]) -> None:
        for index, bottom in enumerate(inputs):
            if not isinstance(bottom, Top):
                # pycaffe's wording, which its tests match
                raise TypeError(f"{type_name} input {index} is not a Top (type is {type(bottom)})")
        self.type_name = type_name
        self.inputs = tuple(inputs)
        self.params = dict(params)
        ntop = self.params.pop("ntop", 1)
        if isinstance(ntop, bool) or not isinstance(ntop, (int, np.integer)) or ntop < 0:
            raise ValueError(f"{type_name}: ntop must be a non-negative integer, got {ntop!r}")
        self.ntop = int(ntop)
        self.in_place = bool(self.params.pop("in_place", False))
        self.tops = tuple(Top(self, n) for n in range(self.ntop))

    def _top_name(self, top: Top, names: _Names, autonames: Counter[str]) -> str:
        if top not in names:
            autonames[self.type_name] += 1
            names[top] = f"{self.type_name}{autonames[self.type_name]}"
        return names[top]

    def _layer_name(self, names: _Names, autonames: Counter[str]) -> str:
        if self not in names:
            if self.tops:
                names[self] = self._top_name(self.tops[0], names, autonames)
            else:
                autonames[self.type_name] += 1
                names[self] = f"{self.type_name}{autonames[self.type_name]}"
        return names[self]

    def _to_proto(self, built: _Built, names: _Names, autonames: Counter[str]) -> None:
        if self in built:
            return
        bottoms = []
        for bottom in self.inputs:
            bottom._to_proto(built, names, autonames)
            bottoms.append(built[bottom.fn].top[bottom.n])
        layer = caffe_pb2.LayerParameter(type=self.type_name, bottom=bottoms)
        if self.in_place:
            layer.top.extend(bottoms)
        else:
            layer.top.extend(self._top_name(top, names, autonames) for top in self.tops)
        layer.name = self._layer_name(names, autonames)
        own = _param_names.get(self.type_name)
        for key, value in self.params.items():
            self._assign(layer, own, key, value)
        built[self] = layer

    def _assign(self, layer: caffe_pb2.LayerParameter, own: str | None, key: str, value: Any) -> None:
        target: Any = layer
        if not key.endswith("param") and own is not None and _has_field(getattr(layer, f"{own}_param"), key):
            target = getattr(layer, f"{own}_param")
        elif not _has_field(layer, key):
            where = (
                "LayerParameter" if own is None or key.endswith("param") else f"{own}_param or LayerParameter"
            )
            hint = (
                ""
                if own is not None
                else " (this type has no *_param of its own name: pass xxx_param=dict(...))"
            )
            raise AttributeError(
                f"{self.type_name} layer '{layer.name}': '{key}' is not a field of {where}{hint}"
            )
        try:
            assign_proto(target, key, value)
        except (AttributeError, TypeError, ValueError) as exc:
            raise type(exc)(f"{self.type_name} layer '{layer.name}', {key}={value!r}: {exc}") from None

    def __repr__(self) -> str:
        return f"<Function {self.type_name} ({len(self.inputs)} bottoms, {self.ntop} tops)>"


def _emit(built: _Built) -> caffe_pb2.NetParameter:
    net = caffe_pb2.NetParameter()
    net.layer.extend(built.values())
    return net


def _function_of(item: Any, what: str) -> Function:
    if isinstance(item, Top):
        return item.fn
    if isinstance(item, Function):
        return item
    if isinstance(item, tuple) and item and all(isinstance(t, Top) for t in item):
        raise TypeError(f"{what} is a tuple of {len(item)} tops: unpack it, e.g. n.a, n.b = L.X(..., ntop=2)")
    raise TypeError(f"{what} is not a Top (type is {type(item)})")


def to_proto(*tops: Top | Function) -> caffe_pb2.NetParameter:
    """The NetParameter of every layer the given tops depend on; blob and layer names are generated."""
    built: _Built = OrderedDict()
    autonames: Counter[str] = Counter()
    for index, top in enumerate(tops):
        _function_of(top, f"to_proto argument {index}")._to_proto(built, {}, autonames)
    return _emit(built)


class NetSpec:
    """Named tops: ``n.conv1 = L.Convolution(n.data, ...)`` names the blob (and the layer) ``conv1``."""

    tops: OrderedDict[str, Any]

    def __init__(self) -> None:
        object.__setattr__(self, "tops", OrderedDict())

    def __setattr__(self, name: str, value: Any) -> None:
        self.tops[name] = value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self.tops[name]
        except KeyError:
            raise _NoSuchTop(f"NetSpec has no top named '{name}'") from None

    def __setitem__(self, name: str, value: Any) -> None:
        self.tops[name] = value

    def __getitem__(self, name: str) -> Any:
        return self.__getattr__(name)

    def __delitem__(self, name: str) -> None:
        del self.tops[name]

    def __contains__(self, name: object) -> bool:
        return name in self.tops

    def keys(self) -> list[str]:
        return list(self.tops)

    def to_proto(self) -> caffe_pb2.NetParameter:
        """Every layer the assigned tops depend on; assigned tops take their attribute names."""
        for name, item in self.tops.items():
            _function_of(item, f"NetSpec top '{name}'")  # every entry checked before anything is named
        names: _Names = {item: name for name, item in self.tops.items()}
        built: _Built = OrderedDict()
        autonames: Counter[str] = Counter()
        for item in self.tops.values():
            item._to_proto(built, names, autonames)
        return _emit(built)


class _NoSuchTop(AttributeError, KeyError):
    """A missing NetSpec top: an AttributeError for getattr/hasattr, a KeyError as pycaffe raises."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Layers:
    """``L.Type(*bottoms, **params)`` for any layer type string ``Type``."""

    def __getattr__(self, type_name: str) -> Callable[..., Any]:
        if type_name.startswith("__"):
            raise AttributeError(type_name)

        def layer(*bottoms: Any, **kwargs: Any) -> Any:
            fn = Function(type_name, bottoms, kwargs)
            if fn.ntop == 0:
                return fn
            return fn.tops[0] if fn.ntop == 1 else fn.tops

        layer.__name__ = type_name
        return layer


class _MessageConstants:
    """The enum values (and nested types) of one ``*Parameter`` message: ``P.Pooling.MAX``."""

    def __init__(self, message: Any) -> None:
        self._message = message

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(self._message, name)
        except AttributeError:
            raise AttributeError(f"{self._message.DESCRIPTOR.name} has no constant '{name}'") from None


class Parameters:
    """``P.Type.CONSTANT``: the constants of ``TypeParameter`` in caffe.proto."""

    def __getattr__(self, name: str) -> _MessageConstants:
        if name.startswith("__"):
            raise AttributeError(name)
        message = getattr(caffe_pb2, f"{name}Parameter", None)
        if message is None:
            raise AttributeError(f"caffe.proto has no message {name}Parameter")
        return _MessageConstants(message)


_param_names = param_name_dict()
layers = Layers()
params = Parameters()
