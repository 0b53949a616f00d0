"""A GEMM that adds into its output, on the BLAS numpy itself calls (through ctypes).

``numpy.matmul`` always overwrites its ``out``; a sum of products (a convolution's kernel rows, a
weight gradient over blocks) then needs a product array and an add pass per term. BLAS's own
``gemm`` adds the product into C (beta = 1) while C is in the core's registers. So::

    cpu_blas.gemm(a, b, out, add=True)   # out += a @ b

for 2-D float32/float64 arrays whose rows (or columns, for a and b) are evenly spaced with unit
steps inside them: the strided views BLAS takes as they are (a leading dimension). The library is
the one numpy loaded (threadpoolctl names its file); its ``cblas_?gemm`` is found under the names
numpy's own wheels (``scipy_openblas``, 64-bit integers), older wheels and system builds give it,
and checked once against ``numpy.matmul`` on small transposed and strided operands before use.
Where none is found or the check fails, for operands BLAS cannot take as they are (or whose sizes
its integers cannot hold), and for an ``out`` that is read-only or shares memory with an operand,
the same result comes from ``numpy.matmul`` (into a scratch array and an add, with ``add``).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy

from engine import backend

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
# (name, integer type): numpy >= 2 wheels' scipy-openblas (ILP64), numpy 1.x wheels' OpenBLAS
# (ILP64, suffixed), then the plain CBLAS of a system build (LP64).
_NAMES = (
    ("scipy_cblas_{t}gemm64_", ctypes.c_int64),
    ("cblas_{t}gemm64_", ctypes.c_int64),
    ("scipy_cblas_{t}gemm", ctypes.c_int32),
    ("cblas_{t}gemm", ctypes.c_int32),
)
_KINDS = {
    numpy.dtype(numpy.float32): ("s", ctypes.c_float),
    numpy.dtype(numpy.float64): ("d", ctypes.c_double),
}


def _library_files() -> list[str]:
    """The BLAS libraries loaded now, numpy's own first (threadpoolctl's view; none without it)."""
    try:
        from threadpoolctl import ThreadpoolController

        files = [
            str(lib.filepath) for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"
        ]
    except Exception:  # threadpoolctl missing or unable to inspect a library
        return []
    return sorted(files, key=lambda path: "numpy" not in path)


def _bind(dtype: numpy.dtype) -> Any:
    """The ``cblas_?gemm`` for dtype, typed, or None."""
    letter, real = _KINDS[dtype]
    for path in _library_files():
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for name, integer in _NAMES:
            function = getattr(library, name.format(t=letter), None)
            if function is None:
                continue
            function.restype = None
            function.largest = (1 << (8 * ctypes.sizeof(integer) - 1)) - 1  # an index it takes
            matrix = [ctypes.c_void_p, integer]  # a pointer and its leading dimension
            # order, trans A, trans B, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc
            function.argtypes = [ctypes.c_int] * 3 + [integer] * 3 + [real, *matrix, *matrix, real, *matrix]
            return function
    return None


@functools.cache
def _gemm(dtype: numpy.dtype) -> Any:
    """The checked ``cblas_?gemm`` for dtype, or None (not found, or it disagreed with numpy)."""
    if dtype not in _KINDS:
        return None
    function = _bind(dtype)
    if function is None:
        return None
    rng = numpy.random.default_rng(0)
    a = rng.standard_normal((7, 5)).astype(dtype)
    b = rng.standard_normal((9, 11)).astype(dtype)[1:6, 2:10]  # strided rows
    out = rng.standard_normal((7, 12)).astype(dtype)
    expected = out.copy()
    expected[:, 1:9] += 3 * (a @ b)
    # as they are, a transposed (column-major), b transposed
    cases = ((a, b), (numpy.asfortranarray(a), b), (a, numpy.asfortranarray(b)))
    try:
        if not all(_call(function, x, y, out[:, 1:9], True) for x, y in cases):
            return None
    except Exception:  # a symbol whose ABI is not the one assumed
        return None
    return function if numpy.allclose(out, expected, rtol=1e-4, atol=1e-4) else None


def available(dtype: Any) -> bool:
    """Whether ``gemm`` adds on BLAS itself for this dtype (else through a scratch product)."""
    return _gemm(numpy.dtype(dtype)) is not None


def _layout(m: Any) -> tuple[int, int] | None:
    """(transpose flag, leading dimension) of a 2-D operand BLAS reads as it is, or None."""
    rows, cols = m.shape
    item = m.itemsize
    s0, s1 = m.strides
    if (s1 == item or cols == 1) and (rows == 1 or (s0 % item == 0 and s0 // item >= cols)):
        return NO_TRANS, max(1, cols if rows == 1 else s0 // item)
    if (s0 == item or rows == 1) and (cols == 1 or (s1 % item == 0 and s1 // item >= rows)):
        return TRANS, max(1, rows if cols == 1 else s1 // item)
    return None


def _call(function: Any, a: Any, b: Any, out: Any, add: bool) -> bool:
    """out (=|+=) a @ b on BLAS; False where an operand's layout is not one BLAS takes."""
    la, lb, lc = _layout(a), _layout(b), _layout(out)
    if la is None or lb is None or lc is None or lc[0] != NO_TRANS:
        return False
    m, k = a.shape
    n = b.shape[1]
    if max(m, n, k, la[1], lb[1], lc[1]) > function.largest:
        return False
    function(
        ROW_MAJOR,
        la[0],
        lb[0],
        m,
        n,
        k,
        1.0,
        a.ctypes.data,
        la[1],
        b.ctypes.data,
        lb[1],
        1.0 if add else 0.0,
        out.ctypes.data,
        lc[1],
    )
    return True


def gemm(a: Any, b: Any, out: Any, add: bool = False) -> None:
    """``out = a @ b``, or ``out += a @ b`` with ``add``: 2-D numpy arrays of one float dtype."""
    if out.size == 0:
        return
    if a.shape[1] == 0:
        if not add:
            out[...] = 0
        return
    function = _gemm(out.dtype) if a.dtype == b.dtype == out.dtype else None
    # BLAS writes C whatever it is: a read-only out, or one overlapping an operand, goes to numpy
    # (which refuses the one and copies for the other)
    safe = out.flags.writeable and not (numpy.may_share_memory(out, a) or numpy.may_share_memory(out, b))
    if function is not None and safe and _call(function, a, b, out, add):
        return
    if not add:
        numpy.matmul(a, b, out=out)
        return
    product = backend.scratch("cpu_blas_product", out.shape, out.dtype)
    numpy.matmul(a, b, out=product)
    out += product
