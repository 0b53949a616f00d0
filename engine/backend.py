"""numpy or cupy: the only module that imports cupy.

Everything else asks for ``xp`` once (``array_module()`` for new arrays, ``get_array_module(x)``
for an existing one) and then writes ``xp.*``, so one code path serves the CPU and the GPU.
"""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Any

import numpy

from engine.errors import EngineError

try:  # cupy is an optional extra; its absence (or a broken CUDA install) is a normal state
    import cupy as _cupy

    _cupy_error: str | None = None
except Exception as exc:
    _cupy = None
    _cupy_error = f"cupy is not importable ({type(exc).__name__}: {exc}); install the 'gpu' extra"


class BackendError(EngineError, RuntimeError):
    """The GPU backend was asked for but cannot be used."""


_mode = "cpu"
_device = 0


def gpu_unavailable_reason() -> str | None:
    """None when a CUDA device can be used through cupy, else a sentence saying why not."""
    if _cupy is None:
        return _cupy_error
    try:
        count = _cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"cupy {_cupy.__version__} found no usable CUDA device ({exc})"
    if count == 0:
        return f"cupy {_cupy.__version__} found no CUDA device"
    return None


def gpu_available() -> bool:
    return gpu_unavailable_reason() is None


def set_mode_cpu() -> None:
    global _mode
    _mode = "cpu"


def set_mode_gpu() -> None:
    global _mode
    reason = gpu_unavailable_reason()
    if reason:
        raise BackendError(reason)
    _mode = "gpu"
    _cupy.cuda.Device(_device).use()


def set_device(device_id: int) -> None:
    global _device
    _device = int(device_id)
    if _mode == "gpu":
        _cupy.cuda.Device(_device).use()


def mode() -> str:
    return _mode


def array_module(mode_name: str | None = None) -> ModuleType:
    """The array module for new arrays: numpy in CPU mode, cupy in GPU mode."""
    if (mode_name or _mode) == "gpu":
        if _cupy is None:
            raise BackendError(_cupy_error or "cupy is missing")
        return _cupy
    return numpy


def get_array_module(*arrays: Any) -> ModuleType:
    if _cupy is not None:
        return _cupy.get_array_module(*arrays)
    return numpy


def is_gpu_array(array: Any) -> bool:
    return _cupy is not None and isinstance(array, _cupy.ndarray)


def to_host(array: Any) -> numpy.ndarray:
    """A numpy array with the values of ``array`` (a copy only when it lives on the GPU)."""
    if is_gpu_array(array):
        return _cupy.asnumpy(array)
    return numpy.asarray(array)


def to_module(array: Any, xp: ModuleType) -> Any:
    """``array`` moved to the array module ``xp`` (no copy when it is already there)."""
    if xp is numpy:
        return to_host(array)
    return xp.asarray(array)


def synchronize() -> None:
    """Wait for queued GPU work; timing code calls this, nothing else needs to."""
    if _mode == "gpu" and _cupy is not None:
        _cupy.cuda.get_current_stream().synchronize()


def describe() -> dict[str, Any]:
    """Facts for `main.py device_query`."""
    info: dict[str, Any] = {"numpy": numpy.__version__, "cpu_threads": os.cpu_count()}
    try:
        from threadpoolctl import threadpool_info  # optional, only for a richer report

        info["blas"] = [
            f"{p.get('internal_api')} {p.get('version')} ({p.get('num_threads')} threads)"
            for p in threadpool_info()
        ]
    except ImportError:
        config: Any = numpy.show_config(mode="dicts") or {}
        blas = config.get("Build Dependencies", {}).get("blas", {})
        info["blas"] = [f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()]
    reason = gpu_unavailable_reason()
    if reason:
        info["gpu"] = reason
    else:
        devices = []
        for i in range(_cupy.cuda.runtime.getDeviceCount()):
            props = _cupy.cuda.runtime.getDeviceProperties(i)
            name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
            devices.append(f"GPU {i}: {name}, {props['totalGlobalMem'] / 2**30:.1f} GiB")
        info["gpu"] = f"cupy {_cupy.__version__}, CUDA runtime {_cupy.cuda.runtime.runtimeGetVersion()}"
        info["devices"] = devices
    return info


def scatter_add(target: Any, indices: Any, values: Any) -> None:
    """``target[indices] += values`` with repeated indices summed (numpy's ``add.at``)."""
    get_array_module(target).add.at(target, indices, values)


class Workspace:
    """Scratch arrays a layer reuses from one call to the next, by name.

    An array is made again only when its shape, dtype or array module changes, so training in a
    steady state allocates nothing: on the CPU a fresh large array costs page faults each time, on
    the GPU a memory-pool lookup. Arrays above ``retain_bytes`` are not kept (a net of large layers
    would otherwise hold every layer's scratch at once); ``kept`` says whether one was.
    """

    retain_bytes = 64 << 20

    def __init__(self) -> None:
        self._arrays: dict[str, tuple[ModuleType, Any]] = {}

    def get(
        self,
        name: str,
        shape: tuple[int, ...],
        dtype: Any,
        xp: ModuleType,
        zeros: bool = False,
        fill: float | None = None,
    ) -> Any:
        """An array of that shape and dtype; with ``zeros`` (or ``fill``), zero-filled (``fill``-filled)
        when (re)made (callers that write only part of it each time rely on the rest staying as they
        left it)."""
        entry = self._arrays.get(name)
        if entry is not None and entry[0] is xp and entry[1].shape == shape and entry[1].dtype == dtype:
            return entry[1]
        if zeros:
            fill = 0
        array = xp.empty(shape, dtype) if fill is None else xp.full(shape, fill, dtype)
        if array.nbytes <= self.retain_bytes:
            self._arrays[name] = (xp, array)
        else:
            self._arrays.pop(name, None)
        return array

    def kept(self, name: str, array: Any) -> bool:
        entry = self._arrays.get(name)
        return entry is not None and entry[1] is array


_scratch = threading.local()


def scratch(
    name: str, shape: tuple[int, ...], dtype: Any, fill: float | None = None, layout: Any = None
) -> Any:
    """A numpy scratch array that every layer shares on this thread, by name: valid until the next
    call with that name on this thread, so only for arrays used and done with within one call.
    A Workspace keeps each layer's own scratch, so a net holds the sum of its layers'; this holds,
    per name and thread, only the largest: layers run one at a time, and each thread (a solver's,
    each pool worker) has its own, so two solvers on two threads never share one. Arrays above
    ``Workspace.retain_bytes`` are not kept.

    With ``fill``, the array holds ``fill`` wherever its callers do not write, given that the
    callers of one ``layout`` (hashable: what decides where they write) write the same places each
    time: it is filled again only when the last caller of that name had another layout or shape."""
    buffers: dict[str, Any] | None = getattr(_scratch, "buffers", None)
    if buffers is None:
        buffers = _scratch.buffers = {}
        _scratch.layouts = {}
    layouts: dict[str, Any] = _scratch.layouts
    dtype = numpy.dtype(dtype)
    count = 1
    for extent in shape:
        count *= extent
    nbytes = count * dtype.itemsize
    buffer = buffers.get(name)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = numpy.empty(max(nbytes, 1), numpy.uint8)
        layouts.pop(name, None)
        if nbytes <= Workspace.retain_bytes:
            buffers[name] = buffer
        else:
            buffers.pop(name, None)
    array = buffer[:nbytes].view(dtype).reshape(shape)
    if fill is not None:
        record = (layout, shape, dtype, fill)
        if layouts.get(name) != record:
            array[...] = fill
            layouts[name] = record
    else:
        layouts.pop(name, None)
    return array
