"""GPU matrix products through a cuBLAS handle of the engine's own, which a CUDA graph can capture.

cupy refuses every cuBLAS call while a stream is being captured (its wrapper checks the stream
before each call), so ``cupy.matmul`` cannot go into a graph. cuBLAS itself can: the engine loads
the very libcublas cupy loaded, makes its own handle per thread and device, gives it a fixed
workspace (cuBLAS then allocates nothing during a capture, and picks the same kernels every time,
so a replay computes what the eager call did), and calls the strided-batched GEMM directly.

``matmul(a, b, out)`` is ``cupy.matmul(a, b, out=out)`` for float32/float64 operands whose last two
axes are matrices in row- or column-major order (views such as ``.T`` included) and whose batch
axes broadcast to ``out``'s; it returns False for anything else (other dtypes, odd strides, no
libcublas found), and the caller uses cupy.matmul.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, NamedTuple

import numpy as np

from engine import backend

WORKSPACE_BYTES = 32 << 20  # what cuBLAS's documentation asks for on Hopper; ample elsewhere
N, T = 0, 1  # cublasOperation_t

_library: Any = None
_library_problem: str | None = None
_local = threading.local()


def _find_library() -> Any:
    """The libcublas cupy has loaded (found in /proc/self/maps), as a ctypes library; None if none."""
    global _library, _library_problem
    if _library is not None or _library_problem is not None:
        return _library
    try:
        from cupy_backends.cuda.libs import cublas  # noqa: F401  (loads libcublas)

        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split()[-1] for line in maps if "libcublas.so" in line and "/" in line}
        path = next(p for p in sorted(paths) if "libcublasLt" not in p)
        _library = ctypes.CDLL(path)
    except Exception as exc:  # no Linux /proc, no cupy cuBLAS: the callers keep cupy.matmul
        _library_problem = f"{type(exc).__name__}: {exc}"
    return _library


class _Handle:
    """A cuBLAS handle with its own workspace, for one thread on one device."""

    def __init__(self, library: Any, cupy: Any) -> None:
        self.library = library
        self.value = ctypes.c_void_p()
        _check(library.cublasCreate_v2(ctypes.byref(self.value)), "cublasCreate")
        self.workspace = cupy.empty(WORKSPACE_BYTES, dtype=np.uint8)
        self._use_workspace()
        self.stream: int | None = None

    def on(self, stream: int) -> Any:
        if stream != self.stream:
            _check(self.library.cublasSetStream_v2(self.value, ctypes.c_void_p(stream)), "cublasSetStream")
            self._use_workspace()  # cublasSetStream puts the default workspace back
            self.stream = stream
        return self.value

    def _use_workspace(self) -> None:
        pointer, size = ctypes.c_void_p(self.workspace.data.ptr), ctypes.c_size_t(WORKSPACE_BYTES)
        _check(self.library.cublasSetWorkspace_v2(self.value, pointer, size), "cublasSetWorkspace")


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what} failed (cuBLAS status {status})")


def _handle(cupy: Any) -> Any:
    handles = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = {}
    device = cupy.cuda.runtime.getDevice()
    if device not in handles:
        handles[device] = _Handle(_library, cupy)
    return handles[device].on(cupy.cuda.get_current_stream().ptr)


def _layout(rows: int, cols: int, s0: int, s1: int) -> tuple[int, int] | None:
    """(op, ld) of a row-major (rows, cols) matrix with element strides (s0, s1), as cuBLAS's
    column-major sees its memory: N when rows are contiguous (the memory is its transpose), T when
    columns are; None when neither."""
    if cols == 1 or s1 == 1:
        ld = s0 if rows > 1 else cols
        if ld >= max(cols, 1):
            return N, ld
    if rows == 1 or s0 == 1:
        ld = s1 if cols > 1 else rows
        if ld >= max(rows, 1):
            return T, ld
    return None


def _batches(out: Any, *operands: Any) -> list[tuple[int, tuple[int, ...]]] | None:
    """out's batch axes as (size, (stride of out, of each operand)) after broadcasting, axes of
    size 1 dropped and neighbours merged where every array allows; None for a negative stride."""
    shape = out.shape[:-2]
    axes: list[tuple[int, tuple[int, ...]]] = []
    for axis, size in enumerate(shape):
        if size == 1:
            continue
        steps = []
        for array in (out, *operands):
            offset = axis - (len(shape) - (array.ndim - 2))
            if offset < 0 or array.shape[offset] == 1:
                steps.append(0)
            else:
                steps.append(array.strides[offset] // array.itemsize)
        if any(s < 0 for s in steps):
            return None
        axes.append((size, tuple(steps)))
    merged: list[tuple[int, tuple[int, ...]]] = []
    for size, strides in axes:
        if merged:
            outer, outer_strides = merged[-1]
            if all(o == s * size for o, s in zip(outer_strides, strides)):
                merged[-1] = (outer * size, strides)
                continue
        merged.append((size, strides))
    return merged


class Call(NamedTuple):
    """One cublas<t>gemmStridedBatched call, offsets and strides in elements of each array's view."""

    op_b: int
    op_a: int
    n: int
    m: int
    k: int
    b_offset: int
    ldb: int
    stride_b: int
    a_offset: int
    lda: int
    stride_a: int
    out_offset: int
    ldc: int
    stride_out: int
    batch: int


def plan(a: Any, b: Any, out: Any) -> list[Call] | None:
    """The cuBLAS calls that compute out = a @ b (numpy or cupy arrays alike), or None when the
    layouts are not ones cuBLAS takes as they are. Row-major out = a b is column-major
    out^T = b^T a^T, so each call computes the (n x m) product op(b) op(a)."""
    if a.ndim < 2 or b.ndim < 2 or out.ndim < 2:
        return None
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if b.shape[-2] != k or out.shape[-2:] != (m, n) or k == 0 or out.size == 0:
        return None
    item = out.itemsize
    la = _layout(m, k, a.strides[-2] // item, a.strides[-1] // item)
    lb = _layout(k, n, b.strides[-2] // item, b.strides[-1] // item)
    lc = _layout(m, n, out.strides[-2] // item, out.strides[-1] // item)
    batches = _batches(out, a, b)
    if la is None or lb is None or lc is None or lc[0] != N or batches is None or len(batches) > 2:
        return None
    outer = batches[0] if len(batches) == 2 else (1, (0, 0, 0))
    inner = batches[-1] if batches else (1, (0, 0, 0))
    calls = []
    for index in range(outer[0]):
        shift = [index * s for s in outer[1]]
        calls.append(
            Call(
                lb[0], la[0], n, m, k,
                shift[2], lb[1], inner[1][2],
                shift[1], la[1], inner[1][1],
                shift[0], lc[1], inner[1][0],
                inner[0],
            )
        )  # fmt: skip
    return calls


def matmul(a: Any, b: Any, out: Any) -> bool:
    """out = a @ b (broadcast over batch axes) through the engine's cuBLAS handle; False when the
    case is not one this covers (the caller then uses cupy.matmul)."""
    if not (a.dtype == b.dtype == out.dtype and out.dtype in (np.float32, np.float64)):
        return False
    calls = plan(a, b, out)
    if calls is None or _find_library() is None:
        return False
    handle = _handle(backend.array_module("gpu"))
    item = out.itemsize
    one, zero = (
        (ctypes.c_float(1), ctypes.c_float(0)) if item == 4 else (ctypes.c_double(1), ctypes.c_double(0))
    )
    gemm = _library.cublasSgemmStridedBatched if item == 4 else _library.cublasDgemmStridedBatched
    for call in calls:
        status = gemm(
            handle,
            call.op_b,
            call.op_a,
            call.n,
            call.m,
            call.k,
            ctypes.byref(one),
            ctypes.c_void_p(b.data.ptr + call.b_offset * item),
            call.ldb,
            ctypes.c_longlong(call.stride_b),
            ctypes.c_void_p(a.data.ptr + call.a_offset * item),
            call.lda,
            ctypes.c_longlong(call.stride_a),
            ctypes.byref(zero),
            ctypes.c_void_p(out.data.ptr + call.out_offset * item),
            call.ldc,
            ctypes.c_longlong(call.stride_out),
            call.batch,
        )
        _check(status, "cublasGemmStridedBatched")
    return True
