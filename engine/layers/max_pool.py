"""MAX pooling on the CPU in float32: the compiled kernels of engine/native/max_pool.c.

The numpy path (engine.layers.pooling_cpu) copies the input into the frame's phase planes and then
makes a pass over them per kernel offset. The kernels read each input row once: its window maxima, a
vector of windows at a time, then down the rows. At 2 threads (2-core Zen 5), forward / backward,
ms: ResNet's pool1 (3x3/2, 8 x 64 x 112 x 112) 2.2 / 0.8 against numpy's 5.3 / 3.1; CIFAR-10
quick's (3x3/2, 100 x 32 x 32 x 32) 0.9 / 0.3 against 2.8 / 1.5; LeNet's (2x2/2) 0.23 / 0.10
against 0.37 / 0.36. The rules are Caffe's (from -FLT_MAX, the first maximum in raster order, NaN
never chosen), and the index of each chosen element (h W + w, -1 where none was) is kept, int32,
for the backward and the mask top.

Threads take ranges of planes (one image's channel each). Without a C compiler at install the library
is not built and ``available()`` is False; ``BARISTA_MAX_POOL=0`` turns it off (to compare).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from engine import backend, compiled, parallel

_P, _I = compiled.POINTER, compiled.INDEX
ABI = 1  # mp_abi() of the C file these calls are written for

_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "mp_kernel_name": (ctypes.c_char_p, []),
    "mp_select": (ctypes.c_int, [ctypes.c_char_p]),
    "mp_scratch_floats": (_I, [_P]),
    "mp_forward": (None, [_P, _P, _P, _P, _I, _I, _P]),
    "mp_backward": (None, [_P, _P, _P, _P, _I, _I]),
}


def _load() -> Any:
    return compiled.load("engine._max_pool", "mp_abi", ABI, "BARISTA_MAX_POOL", _SIGNATURES)


_lib = _load()


def available() -> bool:
    return _lib is not None


def kernel_name() -> str:
    """The instruction set the kernels run with ("avx512", "avx2", "baseline"), or "" when not built."""
    return compiled.kernel_name(_lib, "mp_kernel_name")


def select(name: str) -> bool:
    """Run the kernels of that instruction set from now on; False if this CPU cannot (tests)."""
    return compiled.select(_lib, "mp_select", name)


def geometry(size: Any, pooled: Any, kernel: Any, stride: Any, pad: Any) -> Any:
    """The kernels' geometry: input (H, W), output (PH, PW), kernel, stride and padding."""
    return np.array([*size, *pooled, *kernel, *stride, *pad], np.int64)


def _takes(g: Any, x: Any, y: Any, index: Any) -> bool:
    """Whether the kernels can take these arrays: numpy, C-contiguous, x and y float32, index int32,
    x (N, C, H, W) and y, index (N, C, PH, PW) of the geometry (they index memory by it)."""
    arrays = ((x, np.float32), (y, np.float32), (index, np.int32))
    if _lib is None or not all(
        isinstance(a, np.ndarray) and a.dtype == t and a.flags.c_contiguous and a.ndim == 4 for a, t in arrays
    ):
        return False
    h, w, ph, pw = (int(v) for v in g[:4])
    return x.shape[2:] == (h, w) and y.shape == index.shape == (*x.shape[:2], ph, pw)


def forward(x: Any, y: Any, index: Any, g: Any) -> bool:
    """y = the windows' maxima of x, index = their elements' h W + w; False (nothing done) for arrays
    the kernels cannot take."""
    if not _takes(g, x, y, index):
        return False
    planes = x.shape[0] * x.shape[1]
    floats = int(_lib.mp_scratch_floats(g.ctypes.data))
    x0, y0, i0, g0 = x.ctypes.data, y.ctypes.data, index.ctypes.data, g.ctypes.data

    def work(start: int, stop: int) -> None:
        scratch = backend.scratch("max_pool", (floats,), np.float32)
        _lib.mp_forward(x0, y0, i0, g0, start, stop, scratch.ctypes.data)

    parallel.run(work, planes, np, parallel.grain(int(g[0] * g[1])))
    return True


def backward(dy: Any, index: Any, dx: Any, g: Any) -> bool:
    """dx = 0, then each output's dy added onto its chosen element; False (nothing done) for arrays the
    kernels cannot take."""
    if not _takes(g, dx, dy, index):
        return False
    dy0, i0, dx0, g0 = dy.ctypes.data, index.ctypes.data, dx.ctypes.data, g.ctypes.data

    def work(start: int, stop: int) -> None:
        _lib.mp_backward(dy0, i0, dx0, g0, start, stop)

    parallel.run(work, dx.shape[0] * dx.shape[1], np, parallel.grain(int(g[0] * g[1])))
    return True
