"""Fused CUDA kernels for the GPU path, where one kernel replaces many small array operations.

On the GPU a LeNet iteration is bound by launch overhead, not arithmetic: im2col as one strided copy
per kernel offset, pooling through patch arrays, and the solver's update as a handful of element-wise
operations per parameter each cost a launch (and Python time). These kernels do each of those in one
launch. Every entry point takes arrays of one module and returns False (doing nothing) when that
module is numpy, or the case is not one a kernel covers, so callers keep their array code as the
general path. ``ENGINE_KERNELS=0`` in the environment turns the kernels off (to compare or debug).

The kernels follow Caffe's own CUDA code (im2col.cu, pooling_layer.cu, sgd_solver.cu): gathers
rather than atomics, so results do not depend on thread order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine import backend
from engine.kernels.sources import SOURCES

Ints = Sequence[int]
THREADS = 256
MAX_BLOCKS = 65536  # the kernels loop with a grid stride, so any count fits


SWITCHED_OFF = os.environ.get("ENGINE_KERNELS", "1") == "0"


def enabled(*arrays: Any) -> bool:
    """True when every array lives on the GPU and the kernels are not switched off."""
    return not SWITCHED_OFF and all(backend.is_gpu_array(a) for a in arrays)


_compiled: dict[tuple[str, str], Any] = {}


def _kernel(name: str, dtype: Any) -> Any:
    """The kernel ``name`` for float32 or float64 data, compiled on first use."""
    type_name = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}[np.dtype(dtype)]
    key = (name, type_name)
    if key not in _compiled:
        cupy = backend.array_module("gpu")
        _compiled[key] = cupy.RawKernel(
            f"typedef {type_name} T;\n" + SOURCES[name], name, options=("--fmad=false",)
        )
    return _compiled[key]


def _launch(name: str, dtype: Any, count: int, *args: Any) -> None:
    if count <= 0:
        return
    blocks = min((count + THREADS - 1) // THREADS, MAX_BLOCKS)
    _kernel(name, dtype)((blocks,), (THREADS,), (*args, np.int64(count)))


def _i32(*values: int) -> tuple[Any, ...]:
    return tuple(np.int32(v) for v in values)


def _floating(*arrays: Any) -> bool:
    return all(a.dtype in (np.float32, np.float64) and a.dtype == arrays[0].dtype for a in arrays)


# --- convolution -----------------------------------------------------------------------------
def im2col_2d(x: Any, col: Any, kernel: Ints, pad: Ints, stride: Ints, dilation: Ints) -> bool:
    """Per-image columns (N, C, KH, KW, OH, OW) of x (N, C, H, W), zero in the padding."""
    if len(kernel) != 2 or not enabled(x, col) or not _floating(x, col) or not col.flags.c_contiguous:
        return False
    x = x if x.flags.c_contiguous else x.copy()
    n, c, h, w = x.shape
    oh, ow = col.shape[-2:]
    _launch(
        "im2col_2d",
        x.dtype,
        n * c * oh * ow,
        x,
        col,
        *_i32(c, h, w, *kernel, *pad, *stride, *dilation, oh, ow),
    )
    return True


def col2im_2d(col: Any, x: Any, kernel: Ints, pad: Ints, stride: Ints, dilation: Ints) -> bool:
    """x (N, C, H, W) = the sum of the per-image column entries (N, C, KH, KW, OH, OW) read from each
    pixel."""
    if len(kernel) != 2 or not enabled(x, col) or not _floating(x, col) or not x.flags.c_contiguous:
        return False
    col = col if col.flags.c_contiguous else col.copy()
    n, c, h, w = x.shape
    oh, ow = col.shape[-2:]
    _launch(
        "col2im_2d", x.dtype, n * c * h * w, col, x, *_i32(c, h, w, *kernel, *pad, *stride, *dilation, oh, ow)
    )
    return True


# --- max pooling -----------------------------------------------------------------------------
def max_pool_forward(x: Any, y: Any, mask: Any, kernel: Ints, stride: Ints, pad: Ints) -> bool:
    """y (N, C, PH, PW): each window's largest value (at least -FLT_MAX, the first in raster order on
    ties, NaN passed over as Caffe's ``>`` does); mask (int32, same shape): its index h W + w, -1
    where none was chosen."""
    if (
        not enabled(x, y, mask)
        or not _floating(x, y)
        or not (y.flags.c_contiguous and mask.flags.c_contiguous)
    ):
        return False
    x = x if x.flags.c_contiguous else x.copy()
    n, c, h, w = x.shape
    ph, pw = y.shape[-2:]
    _launch("max_pool_forward", x.dtype, y.size, x, y, mask, *_i32(c, h, w, ph, pw, *kernel, *stride, *pad))
    return True


def max_pool_backward(dy: Any, mask: Any, dx: Any, kernel: Ints, stride: Ints, pad: Ints) -> bool:
    """dx (N, C, H, W): the sum of dy over the windows whose mask chose that pixel (overwritten)."""
    if not enabled(dy, mask, dx) or not _floating(dy, dx) or not dx.flags.c_contiguous:
        return False
    dy = dy if dy.flags.c_contiguous else dy.copy()
    n, c, h, w = dx.shape
    ph, pw = dy.shape[-2:]
    _launch(
        "max_pool_backward", dx.dtype, dx.size, dy, mask, dx, *_i32(c, h, w, ph, pw, *kernel, *stride, *pad)
    )
    return True


# --- solver ----------------------------------------------------------------------------------
def sgd_update(
    data: Any, diff: Any, history: Any, scale: float, decay: float, momentum: float, rate: float
) -> bool:
    """Caffe's SGD step in one pass: g = scale diff + decay data; v = momentum v + rate g;
    diff = v; data -= v (Normalize, L2 Regularize, ComputeUpdateValue and Net::Update together)."""
    arrays = (data, diff, history)
    if not enabled(*arrays) or not _floating(*arrays) or not all(a.flags.c_contiguous for a in arrays):
        return False
    t = data.dtype.type
    _launch(
        "sgd_update", data.dtype, data.size, data, diff, history, t(scale), t(decay), t(momentum), t(rate)
    )
    return True


def sgd_update_device_rate(
    data: Any, diff: Any, history: Any, decay: float, momentum: float, rate: Any, lr_mult: float
) -> bool:
    """sgd_update with no gradient scale and the solver's rate in ``rate`` (a one-element device
    array): what a CUDA graph of the whole training step replays while the rate changes."""
    arrays = (data, diff, history, rate)
    if not enabled(*arrays) or not _floating(*arrays) or not all(a.flags.c_contiguous for a in arrays):
        return False
    t = data.dtype.type
    _launch(
        "sgd_update_device_rate",
        data.dtype,
        data.size,
        data,
        diff,
        history,
        t(decay),
        t(momentum),
        rate,
        t(lr_mult),
    )
    return True


# --- softmax loss ----------------------------------------------------------------------------
def softmax_loss_forward(
    scores: Any, labels: Any, prob: Any, loss: Any, valid: Any, bad: Any, ignore_label: int | None
) -> bool:
    """Softmax over the class axis of scores (outer, C, inner) into prob, and for each of the outer *
    inner positions: loss = -log(max(p[label], FLT_MIN)) (0 where ignored), valid = 1 or 0, bad = 1
    where a counted label lies outside [0, C). Labels are truncated to integers as Caffe casts them."""
    arrays = (scores, prob, loss, valid, bad)
    if not enabled(*arrays, labels) or not _floating(scores, prob, loss, valid, labels):
        return False
    if not all(a.flags.c_contiguous for a in (*arrays, labels)):
        return False
    outer, channels, inner = scores.shape
    _launch(
        "softmax_loss_forward",
        scores.dtype,
        outer * inner,
        scores,
        labels,
        prob,
        loss,
        valid,
        bad,
        *_i32(channels, inner, int(ignore_label is not None), ignore_label or 0),
    )
    return True


def softmax_loss_backward(prob: Any, labels: Any, valid: Any, scale: Any, dx: Any) -> bool:
    """dx = (prob - onehot(label)) * valid * scale, with scale a one-element device array."""
    if not enabled(prob, labels, valid, scale, dx) or not _floating(prob, labels, valid, scale, dx):
        return False
    if not all(a.flags.c_contiguous for a in (prob, labels, valid, dx)):
        return False
    outer, channels, inner = prob.shape
    _launch(
        "softmax_loss_backward", prob.dtype, prob.size, prob, labels, valid, scale, dx, *_i32(channels, inner)
    )
    return True
