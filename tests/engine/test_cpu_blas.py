"""engine.cpu_blas: a GEMM that adds into its output, on numpy's own BLAS, for the strided and
transposed operands BLAS takes as they are; numpy.matmul and an add where it cannot."""

from __future__ import annotations

import numpy as np
import pytest

from engine import cpu_blas


def operands(dtype, rng):
    """(a, b, out) views: a transposed (column-major), b with strided rows, out a slice of wider rows."""
    a = np.asfortranarray(rng.standard_normal((6, 9)).astype(dtype))
    b = rng.standard_normal((12, 15)).astype(dtype)[2:11, 3:13]
    out = rng.standard_normal((6, 14)).astype(dtype)
    return a, b, out


@pytest.fixture(params=["BLAS", "numpy.matmul"])
def route(request, monkeypatch):
    if request.param == "numpy.matmul":
        monkeypatch.setattr(cpu_blas, "_gemm", lambda dtype: None)
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_writes_and_adds_the_product(route, dtype):
    rng = np.random.default_rng(0)
    a, b, out = operands(dtype, rng)
    before = out.copy()
    cpu_blas.gemm(a, b, out[:, 2:12], add=True)
    expected = before.copy()
    expected[:, 2:12] += a.astype(np.float64) @ b.astype(np.float64)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, expected, rtol=tolerance, atol=tolerance)
    cpu_blas.gemm(a, b, out[:, 2:12])  # overwrites, and leaves the rest of the rows alone
    expected[:, 2:12] = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=tolerance, atol=tolerance)


def test_numpy_s_blas_is_found_and_checked():
    """numpy's wheels carry an OpenBLAS whose cblas gemm this binds (the check multiplies
    transposed and strided operands against numpy.matmul before any use)."""
    assert cpu_blas.available(np.float32) and cpu_blas.available(np.float64)
    assert not cpu_blas.available(np.int64)


@pytest.mark.parametrize(
    "shape, strides, expected",
    [
        ((3, 4), (16, 4), (cpu_blas.NO_TRANS, 4)),
        ((3, 4), (40, 4), (cpu_blas.NO_TRANS, 10)),  # rows of a wider array
        ((3, 4), (4, 12), (cpu_blas.TRANS, 3)),  # column-major
        ((1, 4), (0, 4), (cpu_blas.NO_TRANS, 4)),  # one row: its stride does not matter
        ((3, 4), (8, 4), None),  # rows overlapping: no leading dimension
        ((3, 4), (16, 8), None),  # no unit stride
    ],
)
def test_layouts_blas_takes_as_they_are(shape, strides, expected):
    base = np.zeros(64, np.float32)
    view = np.lib.stride_tricks.as_strided(base, shape, strides)
    assert cpu_blas._layout(view) == expected


def test_operands_blas_cannot_take_go_through_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal((12, 5)).astype(np.float32)[::2]  # rows two apart: fine; columns:
    b = np.lib.stride_tricks.as_strided(b, (6, 5), (b.strides[0], 8))  # every other value: no unit stride
    out = np.ones((4, 5), np.float32)
    cpu_blas.gemm(a, b, out, add=True)
    np.testing.assert_allclose(out, 1 + a @ np.ascontiguousarray(b), rtol=1e-5)


def test_empty_products():
    out = np.full((3, 2), 7.0)
    cpu_blas.gemm(np.zeros((3, 0)), np.zeros((0, 2)), out, add=True)
    assert (out == 7).all()
    cpu_blas.gemm(np.zeros((3, 0)), np.zeros((0, 2)), out)
    assert (out == 0).all()


def test_an_out_blas_must_not_write_goes_through_numpy():
    """A read-only out is refused as numpy refuses it; an out overlapping an operand is computed
    from the operand as it was (numpy copies; BLAS would read what it had just written)."""
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    frozen = np.zeros((3, 3))
    frozen.flags.writeable = False
    with pytest.raises(ValueError):
        cpu_blas.gemm(a, np.ones((4, 3)), frozen)
    m = np.arange(16, dtype=np.float64).reshape(4, 4) / 7
    expected = m + m @ m
    cpu_blas.gemm(m, m, m, add=True)
    np.testing.assert_allclose(m, expected, rtol=1e-12)
