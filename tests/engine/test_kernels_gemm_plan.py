"""engine.kernels.gemm's plan: the cuBLAS strided-batched calls it makes for out = a @ b, run here
by a column-major GEMM written in numpy over the arrays' memory, must give numpy's matmul for every
layout the engine's layers hand it (weights broadcast over images, transposed views, slices of
wider rows, batch axes of size 1) and refuse layouts cuBLAS cannot take as they are."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from engine.kernels import gemm


class Memory:
    """One flat buffer that every operand is a view into, so offsets are element counts."""

    def __init__(self, size: int, xp=np, dtype=np.float64) -> None:
        self.flat = xp.zeros(size, dtype)
        self.xp = xp
        self.used = 0

    def take(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        count = int(np.prod(shape))
        view = self.flat[self.used : self.used + count].reshape(shape)
        view[...] = self.xp.asarray(rng.standard_normal(shape).astype(self.flat.dtype))
        self.used += count + 3
        return view

    def start(self, view: np.ndarray) -> int:
        return (view.__array_interface__["data"][0] - self.flat.ctypes.data) // 8


def stored(memory: Memory, start: int, rows: int, cols: int, ld: int, batch: int, stride: int) -> np.ndarray:
    """(batch, rows, cols) column-major matrices at ``start`` with leading dimension ld."""
    base = memory.flat[start:]
    return as_strided(base, shape=(batch, rows, cols), strides=(stride * 8, 8, ld * 8), writeable=True)


def run_plan(memory: Memory, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    calls = gemm.plan(a, b, out)
    if calls is None:
        return False
    for c in calls:
        shape_b = (c.n, c.k) if c.op_b == gemm.N else (c.k, c.n)
        shape_a = (c.k, c.m) if c.op_a == gemm.N else (c.m, c.k)
        mb = stored(memory, memory.start(b) + c.b_offset, *shape_b, c.ldb, c.batch, c.stride_b)
        ma = stored(memory, memory.start(a) + c.a_offset, *shape_a, c.lda, c.batch, c.stride_a)
        mc = stored(memory, memory.start(out) + c.out_offset, c.n, c.m, c.ldc, c.batch, c.stride_out)
        op_b = mb if c.op_b == gemm.N else mb.swapaxes(1, 2)
        op_a = ma if c.op_a == gemm.N else ma.swapaxes(1, 2)
        mc[...] = op_b @ op_a
    return True


def case_arrays(name: str, rng: np.random.Generator, memory: Memory):
    n, g, m, k, p = 3, 2, 4, 5, 6
    if name == "conv forward":  # w (G, M, K) over images; col (N, G, K, P)
        return memory.take((g, m, k), rng), memory.take((n, g, k, p), rng), memory.take((n, g, m, p), rng)
    if name == "conv forward, one group":
        w = memory.take((m, k), rng).reshape(1, m, k)
        return w, memory.take((n, 1, k, p), rng), memory.take((n, 1, m, p), rng)
    if name == "conv data gradient":  # w^T as a view
        wt = memory.take((g, m, k), rng).swapaxes(-1, -2)
        return wt, memory.take((n, g, m, p), rng), memory.take((n, g, k, p), rng)
    if name == "conv weight gradient":  # col^T as a view
        col_t = memory.take((n, g, k, p), rng).swapaxes(-1, -2)
        return memory.take((n, g, m, p), rng), col_t, memory.take((n, g, m, k), rng)
    if name == "inner product forward":  # W (O, K) @ x^T
        return memory.take((7, k), rng), memory.take((n, k), rng).T, memory.take((7, n), rng)
    if name == "inner product weight gradient":  # dy^T @ x
        return memory.take((n, 7), rng).T, memory.take((n, k), rng), memory.take((7, k), rng)
    if name == "inner product data gradient":
        return memory.take((n, 7), rng), memory.take((7, k), rng), memory.take((n, k), rng)
    if name == "slices of wider rows":
        a = memory.take((m, k + 3), rng)[:, 1 : k + 1]
        b = memory.take((k, p + 2), rng)[:, :p]
        return a, b, memory.take((m, p + 4), rng)[:, 2 : p + 2]
    if name == "vectors":
        return memory.take((1, k), rng), memory.take((k, 1), rng), memory.take((1, 1), rng)
    if name == "batch on both, broadcast b":
        return memory.take((n, g, m, k), rng), memory.take((k, p), rng), memory.take((n, g, m, p), rng)
    raise AssertionError(name)


CASES = [
    "conv forward",
    "conv forward, one group",
    "conv data gradient",
    "conv weight gradient",
    "inner product forward",
    "inner product weight gradient",
    "inner product data gradient",
    "slices of wider rows",
    "vectors",
    "batch on both, broadcast b",
]


@pytest.mark.parametrize("name", CASES)
def test_the_plan_computes_numpys_matmul(name):
    memory = Memory(4000)
    a, b, out = case_arrays(name, np.random.default_rng(len(name)), memory)
    assert run_plan(memory, a, b, out), "the plan refused a layout the layers use"
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-12, atol=1e-12)


def test_operands_are_left_as_they_were():
    memory = Memory(4000)
    a, b, out = case_arrays("conv data gradient", np.random.default_rng(0), memory)
    before = memory.flat.copy()
    run_plan(memory, a, b, out)
    changed = np.flatnonzero(memory.flat != before)
    start = memory.start(out)
    assert changed.min() >= start and changed.max() < start + out.size


def test_layouts_cublas_cannot_take_are_refused():
    memory = Memory(4000)
    rng = np.random.default_rng(1)
    every_other = memory.take((4, 10), rng)[:, ::2]  # neither rows nor columns contiguous
    assert gemm.plan(every_other, memory.take((5, 3), rng), memory.take((4, 3), rng)) is None
    transposed_out = memory.take((3, 4), rng).T
    assert gemm.plan(memory.take((4, 5), rng), memory.take((5, 3), rng), transposed_out) is None
    reversed_rows = memory.take((4, 5), rng)[::-1]
    assert gemm.plan(reversed_rows, memory.take((5, 3), rng), memory.take((4, 3), rng)) is None


def test_mixed_types_are_left_to_cupy_matmul():
    a = np.ones((2, 2), np.float32)
    assert not gemm.matmul(a, a, np.empty((2, 2), np.float64))  # mixed types: cupy.matmul's job
