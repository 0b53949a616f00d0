"""pycaffe's coord_map: how the spatial coordinates of one net-spec top relate to another's.

A layer's map is ``(axis, a, b)``: output coordinate ``a * x + b`` for input coordinate ``x`` on
the spatial axes after ``axis`` (``a`` and ``b`` are arrays, one entry per spatial axis; axis
``None`` means the layer works elementwise and fits any axis). Convolution, Pooling and Im2col
shrink coordinates by their stride and shift them by the padding and half the (dilated) kernel;
Deconvolution does the reverse; Crop shifts by its offsets; the elementwise layers in
:data:`PASS_THROUGH_LAYERS` leave coordinates alone. Anything else ends a walk.

:func:`coord_map_from_to` composes the maps from one top back to the nearest blob it shares with
another top, and :func:`crop` turns that into the Crop layer that aligns them, as FCNs do.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from engine.pycaffe.net_spec import Function, Top
from engine.pycaffe.net_spec import layers as L

__all__ = [
    "PASS_THROUGH_LAYERS",
    "AxisMismatchException",
    "UndefinedMapException",
    "compose",
    "conv_params",
    "coord_map",
    "coord_map_from_to",
    "crop",
    "crop_params",
    "inverse",
]

Map = tuple[Any, Any, Any]  # (axis or None, scale, shift)

PASS_THROUGH_LAYERS = [
    "AbsVal",
    "BatchNorm",
    "Bias",
    "BNLL",
    "Dropout",
    "Eltwise",
    "ELU",
    "Log",
    "LRN",
    "Exp",
    "MVN",
    "Power",
    "ReLU",
    "PReLU",
    "Scale",
    "Sigmoid",
    "Split",
    "TanH",
    "Threshold",
]

_CONV_LIKE = ("Convolution", "Pooling", "Im2col")
_LEGACY_FIELDS = {"pad_h", "pad_w", "kernel_h", "kernel_w", "stride_h", "stride_w"}


class UndefinedMapException(Exception):
    """The layer has no coordinate map (InnerProduct, global pooling, ...)."""


class AxisMismatchException(Exception):
    """Two maps act on different axes and cannot be composed."""


def _spatial_params(fn: Function) -> dict[str, Any]:
    """The dict holding a layer's options: its ``*_param`` dict when given, else the flat keywords."""
    nested = "pooling_param" if fn.type_name == "Pooling" else "convolution_param"
    if fn.type_name == "Crop":
        nested = "crop_param"
    found = fn.params.get(nested)
    return found if isinstance(found, dict) else fn.params


def conv_params(fn: Function) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """``(axis, stride, effective kernel extent, pad)`` of a Convolution/Deconvolution/Pooling/Im2col.

    The effective extent of a dilated kernel is ``(kernel - 1) * dilation + 1``; stride defaults
    to 1, pad to 0, dilation to 1, axis to 1 (the channel axis; spatial axes follow it).
    """
    options = _spatial_params(fn)
    legacy = _LEGACY_FIELDS & (set(fn.params) | set(options))
    if legacy:
        raise AssertionError(f"cropping does not support legacy _h/_w params ({', '.join(sorted(legacy))})")
    if options.get("global_pooling"):
        raise UndefinedMapException(f"{fn.type_name} with global_pooling has no coordinate map")
    if "kernel_size" not in options:
        raise KeyError(f"{fn.type_name}: kernel_size is needed to map coordinates")
    kernel = np.array(options["kernel_size"], ndmin=1)
    dilation = np.array(options.get("dilation", 1), ndmin=1)
    return (
        options.get("axis", 1),
        np.array(options.get("stride", 1), ndmin=1),
        (kernel - 1) * dilation + 1,
        np.array(options.get("pad", 0), ndmin=1),
    )


def crop_params(fn: Function) -> tuple[int, np.ndarray]:
    """``(axis, offset)`` of a Crop layer; axis defaults to 2 (the first spatial axis of N x C x H x W)."""
    options = _spatial_params(fn)
    return options.get("axis", 2), np.array(options.get("offset", 0), ndmin=1)


def coord_map(fn: Function) -> Map:
    """The ``(axis, a, b)`` map of one layer, output coordinate = ``a * input + b``."""
    if fn.type_name in _CONV_LIKE:
        axis, stride, extent, pad = conv_params(fn)
        return axis, 1 / stride, (pad - (extent - 1) / 2) / stride
    if fn.type_name == "Deconvolution":
        axis, stride, extent, pad = conv_params(fn)
        return axis, stride, (extent - 1) / 2 - pad
    if fn.type_name in PASS_THROUGH_LAYERS:
        return None, 1, 0
    if fn.type_name == "Crop":
        axis, offset = crop_params(fn)
        # Crop's axis names the first cropped axis; the maps count from the axis before it.
        return axis - 1, 1, -offset
    raise UndefinedMapException(f"{fn.type_name} has no coordinate map")


def compose(base_map: Map, next_map: Map) -> Map:
    """Apply ``next_map`` inside ``base_map``: scales multiply; the inner shift scales by the outer scale."""
    ax1, a1, b1 = base_map
    ax2, a2, b2 = next_map
    if ax1 is None:
        axis = ax2
    elif ax2 is None or ax1 == ax2:
        axis = ax1
    else:
        raise AxisMismatchException(f"cannot compose maps on axis {ax1} and axis {ax2}")
    return axis, a1 * a2, a1 * b2 + b1


def inverse(coord_map: Map) -> Map:
    """The map taking outputs back to inputs."""
    axis, a, b = coord_map
    return axis, 1 / a, -b / a


def _mappable_bottoms(top: Top) -> tuple[Top, ...]:
    # Crop maps only its first bottom; the second supplies the shape to crop to.
    bottoms = top.fn.inputs
    return bottoms[:1] if top.fn.type_name == "Crop" else bottoms


def _walk_back(start: Top, stop: dict[Top, Map] | None = None) -> tuple[dict[Top, Map], Top | None]:
    """Maps from ``start`` to each blob behind it, breadth first; stops at the first blob in ``stop``."""
    maps: dict[Top, Map] = {start: (None, 1, 0)}
    queue = deque([start])
    while queue:
        top = queue.popleft()
        if stop is not None and top in stop:
            return maps, top
        try:
            layer_map = coord_map(top.fn)
        except UndefinedMapException:
            continue
        for bottom in _mappable_bottoms(top):
            if bottom not in maps:
                maps[bottom] = compose(maps[top], layer_map)
                queue.append(bottom)
    return maps, None


def coord_map_from_to(top_from: Top, top_to: Top) -> Map:
    """The map from ``top_from``'s coordinates to ``top_to``'s, through their nearest common blob.

    Raises RuntimeError when no chain of mappable layers joins them.
    """
    for name, top in (("top_from", top_from), ("top_to", top_to)):
        if not isinstance(top, Top):
            raise TypeError(f"{name} must be a net-spec Top, not {type(top)}")
    from_maps, _ = _walk_back(top_from)
    to_maps, common = _walk_back(top_to, stop=from_maps)
    if common is None:
        raise RuntimeError("Could not compute map between tops; are they connected by spatial layers?")
    return compose(to_maps[common], inverse(from_maps[common]))


def crop(top_from: Top, top_to: Top) -> Top:
    """A Crop layer cutting ``top_from`` to ``top_to``'s extent, with the axis and offsets the map gives.

    Raises AssertionError (as pycaffe does) when the scales differ, the offset would be negative
    (``top_from`` is smaller) or fractional.
    """
    axis, a, b = coord_map_from_to(top_from, top_to)
    if axis is None:
        raise RuntimeError("no spatial layer joins the tops, so there is no crop axis to align")
    a, b = np.asarray(a), np.asarray(b)
    if not (a == 1).all():
        raise AssertionError(f"scale mismatch on crop (a = {a})")
    if not (b <= 0).all():
        raise AssertionError(f"cannot crop negative offset (b = {b})")
    if not (np.round(b) == b).all():
        raise AssertionError(f"cannot crop noninteger offset (b = {b})")
    offsets = [int(v) for v in np.atleast_1d(-np.round(b))]
    # The map's axis is the one before the first cropped axis.
    return L.Crop(top_from, top_to, crop_param=dict(axis=axis + 1, offset=offsets))
