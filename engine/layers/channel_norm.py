"""BatchNorm's passes on the CPU in float32, with a Scale (and a ReLU) after it folded in: the
compiled kernels of engine/native/channel_norm.c.

numpy runs BatchNorm as seven passes over the blob (mean, centre, variance, divide, copy; the sums
of the backward, the products, the subtractions) and the Scale after it as three more, each a trip
to memory where the blob is larger than the caches. The kernels take one channel at a time: its
values are read from memory once, and the passes after the first find them in the core's cache.
At batch 8 (2 threads, 2-core Zen 5; BatchNorm + Scale, forward / backward, ms): 112 x 112 x 64:
1.8 / 2.1 against numpy's 6.4 / 6.4; 56 x 56 x 64: 0.25 / 0.3 against 1.1 / 1.5. A ReLU after the
Scale costs a comparison in the forward's last pass, and in the backward a read of its output.

Threads take ranges of channels; no sum crosses a channel, so the thread count changes no result.
The sums run in float32 in another order than numpy's, so the two agree to float32 rounding, which
the tests hold them to. Without a C compiler at install the library is not built and ``available()``
is False; ``BARISTA_CHANNEL_NORM=0`` turns it off (to compare).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from engine import compiled, parallel

_P, _I = compiled.POINTER, compiled.INDEX
ABI = 2  # cn_abi() of the C file these calls are written for

_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "cn_kernel_name": (ctypes.c_char_p, []),
    "cn_select": (ctypes.c_int, [ctypes.c_char_p]),
    "cn_forward": (
        None,
        [_P, _P, _P, _I, _I, _I, _I, _I, ctypes.c_int, ctypes.c_float, _P, _P, _P, _P, _P, ctypes.c_int],
    ),
    "cn_backward": (None, [_P, _P, _P, _I, _I, _I, _I, _I, ctypes.c_int, _P, _P, _P, _P, _P]),
}


def _load() -> Any:
    return compiled.load("engine._channel_norm", "cn_abi", ABI, "BARISTA_CHANNEL_NORM", _SIGNATURES)


_lib = _load()


def available() -> bool:
    return _lib is not None


def kernel_name() -> str:
    """The instruction set the kernels run with ("avx512", "avx2", "baseline"), or "" when not built."""
    return compiled.kernel_name(_lib, "cn_kernel_name")


def select(name: str) -> bool:
    """Run the kernels of that instruction set from now on; False if this CPU cannot (tests)."""
    return compiled.select(_lib, "cn_select", name)


def _takes(blobs: list[Any], channels: list[Any], shape: tuple[int, ...]) -> bool:
    """Whether the kernels can take these arrays: numpy, C-contiguous float32, each blob of ``shape``
    (N, C, S) and each per-channel array (or None) of C values. They index memory by the shape."""
    if _lib is None:
        return False
    for a in blobs + [c for c in channels if c is not None]:
        if not isinstance(a, np.ndarray) or a.dtype != np.float32 or not a.flags.c_contiguous:
            return False
    return all(a.shape == shape for a in blobs) and all(c is None or c.size == shape[1] for c in channels)


def _address(a: Any) -> int | None:
    return None if a is None else a.ctypes.data


def forward(
    x: Any,
    x_norm: Any,
    y: Any,
    batch: bool,
    eps: float,
    stats: tuple[Any, Any, Any],
    scale: Any,
    bias: Any,
    relu: bool = False,
) -> bool:
    """x_norm = (x - mean) / std and y = x_norm * scale + bias (y = x_norm where scale is None), then
    max(y, 0) where ``relu`` (with a scale), for (N, C, S) arrays; stats (mean, var, std), each of C
    values: mean and var computed from the batch (the biased variance) where ``batch``, else read;
    std written. False (nothing done) for arrays the kernels cannot take."""
    mean, var, std = stats
    if not _takes([x, x_norm, y], [mean, var, std, scale, bias], x.shape) or (relu and scale is None):
        return False
    n, c, s = x.shape
    a = [_address(v) for v in (x, x_norm, y, mean, var, std, scale, bias)]

    def channels(start: int, stop: int) -> None:
        _lib.cn_forward(a[0], a[1], a[2], n, c, s, start, stop, int(batch), eps, *a[3:], int(relu))

    parallel.run(channels, c, np, parallel.grain(n * s))
    return True


def backward(
    dy: Any,
    x_norm: Any,
    dx: Any,
    batch: bool,
    std: Any,
    scale: Any,
    d_scale: Any,
    d_bias: Any,
    keep: Any = None,
) -> bool:
    """With g = dy (where ``keep`` is given, a ReLU's output after the Scale: dy where keep > 0, else
    0): d_scale += sum(g x_norm) and d_bias += sum(g) per channel where given; dx (None: not wanted)
    = scale / std (g - mean(g) - x_norm mean(g x_norm)) with ``batch`` statistics, else scale / std g
    (scale 1 where None). False (nothing done) for arrays the kernels cannot take."""
    blobs = [dy, x_norm] + [a for a in (dx, keep) if a is not None]
    if not _takes(blobs, [std, scale, d_scale, d_bias], dy.shape):
        return False
    n, c, s = dy.shape
    a = [_address(v) for v in (dy, x_norm, dx, std, scale, d_scale, d_bias, keep)]

    def channels(start: int, stop: int) -> None:
        _lib.cn_backward(a[0], a[1], a[2], n, c, s, start, stop, int(batch), *a[3:])

    parallel.run(channels, c, np, parallel.grain(n * s))
    return True
