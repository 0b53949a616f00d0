"""Blob and parameter shapes from the engine's own layers, without allocating the net. Qt-free.

Each layer of the (phase-filtered) net is set up in order, as ``engine.net.Net`` does, so the shapes
and the error messages are the engine's. Two things keep it cheap enough to rerun on every edit,
even for a ResNet-152 at batch 32 (a real ``Net`` allocates gigabytes there):

* blobs live in a *shape-only* array module: every allocation is a zero-stride view of one element;
* the big weights (those whose class declares ``param_shapes``: Convolution, InnerProduct, ...) are
  handed to the layer as already-loaded blobs of the shape its own set-up computes, so no filler
  draws millions of values.

A layer that fails records its message and leaves its tops unknown; layers after it still get
their shapes where their inputs are known, so one mistake does not blank the whole picture. A data
layer whose source (or mean file) cannot be read gets the shapes ``engine.data_shapes`` assumes
for it, marked as assumed, and everything downstream follows.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import types
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import as_strided

from engine import data_shapes, pyimport, pymodules, relative_paths
from engine.blob import Blob
from engine.data.paths import DEFAULT, DataPaths
from engine.data_shapes import Assumption, Hints
from engine.layers import Layer, create_layer
from proto import caffe_pb2

Shape = tuple[int, ...]
LayerParameter = caffe_pb2.LayerParameter


class _ShapeOnly(types.ModuleType):
    """numpy, except that new arrays take no memory (one element seen through zero strides)."""

    def __init__(self) -> None:
        super().__init__("shape_only")

    def zeros(self, shape, dtype=np.float32, *args, **kwargs):
        shape = (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(d) for d in shape)
        return as_strided(np.zeros(1, dtype), shape, (0,) * len(shape))

    empty = zeros

    def ones(self, shape, dtype=np.float32, *args, **kwargs):
        return self.full(shape, 1, dtype)

    def full(self, shape, fill_value, dtype=np.float32, *args, **kwargs):
        array = self.zeros(shape, dtype)
        array[...] = fill_value
        return array

    def zeros_like(self, a, dtype=None, *args, **kwargs):
        return self.zeros(np.shape(a), dtype or a.dtype)

    empty_like = zeros_like

    def __getattr__(self, name: str):
        return getattr(np, name)


SHAPE_ONLY = _ShapeOnly()


@dataclass
class LayerShapes:
    tops: list[Shape | None] = field(default_factory=list)
    params: list[Shape] = field(default_factory=list)
    error: str | None = None
    data_error: bool = False  # a data layer that cannot read its source: a warning, not a mistake
    assumed: Assumption | None = None  # where a data layer's shapes came from when not from its data
    notes: tuple[str, ...] = ()  # warnings that cost no shape (a mean file that cannot be read)

    @property
    def param_count(self) -> int:
        return sum(math.prod(s) for s in self.params)


def _make_layer(param: LayerParameter, bottoms: list[Blob]) -> tuple[Layer, bool]:
    """The layer, and whether its blobs were pre-shaped from its class's own ``param_shapes``."""
    layer = create_layer(param, xp=SHAPE_ONLY)
    if param.blobs or not bottoms:
        return layer, False
    try:
        shapes = layer.param_shapes(bottoms)
    except Exception:
        shapes = None  # the real set-up below reports the problem in its own words
    if not shapes:
        return layer, False
    # Blobs already there are kept by the layer's set-up (as loaded weights are): shapes, no values.
    layer.blobs = [Blob(shape, np.float32, SHAPE_ONLY) for shape in shapes]
    return layer, True


def _set_up(param: LayerParameter, bottoms: list[Blob], tops: list[Blob], data_paths: DataPaths) -> Layer:
    layer, preshaped = _make_layer(param, bottoms)
    layer.data_paths = data_paths
    if layer.auto_top_blobs:
        tops += [
            Blob((), np.float32, SHAPE_ONLY)
            for _ in range(len(tops), max(layer.min_top, layer.exact_num_top))
        ]
    try:
        layer.setup(bottoms, tops)
    except Exception:
        if not preshaped:
            raise
        layer = create_layer(param, xp=SHAPE_ONLY)  # our guess at the weights was wrong: fill them
        layer.data_paths = data_paths
        layer.setup(bottoms, tops)
    return layer


# Set-up results by (layer, phase, bottom shapes): an edit usually changes one layer of many.
_CACHE: OrderedDict[tuple, LayerShapes] = OrderedDict()
_CACHE_SIZE = 4096
# The canvas, the status bar's totals and the filler previews infer shapes in different threads.
_CACHE_LOCK = threading.Lock()


def _cached(key: tuple) -> LayerShapes | None:
    with _CACHE_LOCK:
        result = _CACHE.get(key)
        if result is not None:
            _CACHE.move_to_end(key)
        return result


def _blob(shape: Shape) -> Blob:
    return Blob(shape, np.float32, SHAPE_ONLY)


def _one(
    param: LayerParameter, bottoms: list[Blob], data_types: frozenset[str], data_paths: DataPaths = DEFAULT
) -> LayerShapes:
    tops = [
        bottoms[i] if i < len(param.bottom) and param.bottom[i] == name else Blob((), np.float32, SHAPE_ONLY)
        for i, name in enumerate(param.top)
    ]
    try:
        layer = _set_up(param, bottoms, tops, data_paths)
    except Exception as exc:  # any failure is the layer's: report it, keep going
        message = str(exc) or type(exc).__name__
        return LayerShapes(
            [None] * len(param.top), [], message, not param.bottom and param.type in data_types
        )
    close = getattr(layer, "close", None)
    if callable(close):
        close()
    return LayerShapes([b.shape for b in tops[: len(param.top)]], [b.shape for b in layer.blobs])


DATA_TYPES = frozenset({"Data", "ImageData", "HDF5Data", "MemoryData", "WindowData"})


def _key(source: LayerParameter, phase: int, bottom_shapes: tuple, module_dirs: Sequence[str]) -> tuple:
    """The cache key of a layer's set-up; () where it must run every time."""
    if source.type == "Python":  # its code may be slow: set up again only when it, or its file, changes
        module = source.python_param.module
        stamp = pymodules.stamp(module, module_dirs) if module else None
        allowed = pyimport.allowed(module_dirs)  # "not run" until its folder is trusted, then run
        key = (source.SerializeToString(deterministic=True), phase, bottom_shapes, tuple(module_dirs))
        return (*key, stamp, allowed)
    # Sources (files) can change under us: a layer without bottoms is always set up again.
    return (source.SerializeToString(deterministic=True), phase, bottom_shapes) if source.bottom else ()


def _explain_python(source: LayerParameter, result: LayerShapes, module_dirs: Sequence[str]) -> LayerShapes:
    module = source.python_param.module
    if result.error and module and "No module named" in result.error and "cannot import" in result.error:
        hint = pymodules.missing_hint(module, module_dirs)
        return LayerShapes(result.tops, result.params, f"{result.error}: {hint}", result.data_error)
    return result


def infer(
    layers: Sequence[LayerParameter],
    phase: int,
    module_dirs: Sequence[str] = (),
    hints: Hints | None = None,
) -> list[LayerShapes]:
    """Shapes for each layer of an already phase-filtered net, in order.

    ``module_dirs``: the folders Python layers' modules are imported from first (the net's own).
    ``hints``: what is known of the data beyond the layers' own fields (typed and recorded shapes,
    the net's path for a deploy net beside it).
    """
    modules = [l.python_param.module for l in layers if l.type == "Python" and l.python_param.module]
    context = pymodules.importing_from(module_dirs, modules) if modules else contextlib.nullcontext()
    with context:
        return _infer(layers, phase, module_dirs, hints)


def _data_layer(param: LayerParameter, layers: Sequence[LayerParameter], hints: Hints | None) -> LayerShapes:
    """A data layer set up from its source; failing that, the shapes assumed for it. A mean file
    that cannot be read is a note: the layer is set up again without it (it changes no shape)."""
    notes: tuple[str, ...] = ()
    where = _data_paths(hints)
    for message, name in relative_paths.DATA_PATHS:  # the files found, as absolute paths
        value = getattr(getattr(param, message), name) if param.HasField(message) else ""
        if value and where.resolve(value).exists():
            setattr(getattr(param, message), name, os.fspath(where.resolve(value)))
    if param.transform_param.HasField("mean_file"):
        _mean, problem = data_shapes.mean_file_shape(param)
        if problem:
            notes = (f"{problem} (it changes no shape: the shapes are found without it)",)
            param.transform_param.ClearField("mean_file")
    result = _one(param, [], DATA_TYPES, where)
    if not result.error:
        return LayerShapes(result.tops, result.params, notes=notes)
    assumed = data_shapes.assume(param, param.phase, hints, layers)
    if assumed is not None and assumed.fact:  # the bundled MNIST, made at Train: no warning
        return LayerShapes(list(assumed.tops), [], None, False, assumed, notes)
    tops = list(assumed.tops) if assumed is not None else result.tops
    return LayerShapes(tops, [], result.error, True, assumed, notes)


def _data_paths(hints: Hints | None) -> DataPaths:
    """Where a data layer's files are looked for: as View Data and a run of the net look for them."""
    if hints is None:
        return DEFAULT
    return hints.data_paths or DataPaths.beside(hints.net_path)


def _infer(
    layers: Sequence[LayerParameter], phase: int, module_dirs: Sequence[str], hints: Hints | None
) -> list[LayerShapes]:
    shapes: dict[str, Shape] = {}  # blob -> its shape as of now
    results: list[LayerShapes] = []
    for source in layers:
        if any(name not in shapes for name in source.bottom):
            results.append(LayerShapes([None] * len(source.top)))  # its input is unknown: no new error
            for name in source.top:
                shapes.pop(name, None)
            continue
        bottom_shapes = tuple(shapes[name] for name in source.bottom)
        key = _key(source, phase, bottom_shapes, module_dirs)
        result = _cached(key) if key else None
        if result is None:
            param = LayerParameter()
            param.CopyFrom(source)
            if not param.HasField("phase"):
                param.phase = phase  # type: ignore[assignment]  # a Phase number
            if data_shapes.reads_source(param):
                result = _data_layer(param, layers, hints)
            else:
                result = _one(param, [_blob(s) for s in bottom_shapes], DATA_TYPES)
            if source.type == "Python":
                result = _explain_python(source, result, module_dirs)
            if key:
                with _CACHE_LOCK:
                    _CACHE[key] = result
                    if len(_CACHE) > _CACHE_SIZE:
                        _CACHE.popitem(last=False)
        results.append(result)
        for name, shape in zip(source.top, result.tops):
            if shape is None:
                shapes.pop(name, None)
            else:
                shapes[name] = shape
    return results
