"""Tile, Reduction and ArgMax against naive references, with gradients and Caffe's CHECKs."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob

# --- Tile ------------------------------------------------------------------------------------


def tile(xp, params: str):
    return make_layer(f'name: "tile" type: "Tile" bottom: "x" top: "y" tile_param {{ {params} }}', xp)


def tile_reference(x: np.ndarray, axis: int, tiles: int) -> np.ndarray:
    shape = list(x.shape)
    shape[axis] *= tiles
    out = np.zeros(shape)
    for index in np.ndindex(*shape):
        source = list(index)
        source[axis] %= x.shape[axis]  # copy t of the block starts at t * d_axis
        out[index] = x[tuple(source)]
    return out


@pytest.mark.parametrize(
    ("params", "axis", "tiles"), [("tiles: 3", 1, 3), ("axis: 0 tiles: 2", 0, 2), ("axis: -1 tiles: 4", 2, 4)]
)
def test_tile_forward_matches_reference(xp, params, axis, tiles):
    bottom, top = random_blob((2, 3, 2), xp), blobs(1, xp)
    layer = tile(xp, params)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    np.testing.assert_array_equal(host(top[0].data), tile_reference(host(bottom.data), axis, tiles))


@pytest.mark.parametrize("params", ["tiles: 3", "axis: 0 tiles: 2", "axis: -1 tiles: 2"])
def test_tile_gradient(xp, params):
    GradientChecker().check(tile(xp, params), [random_blob((2, 2, 3), xp)], blobs(1, xp))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("axis: 1", "must be specified"),
        ("tiles: 0", "must be positive"),
        ("tiles: 2 axis: 3", "out of range"),
    ],
)
def test_tile_rejects_bad_parameters(xp, params, message):
    with pytest.raises(LayerSetupError, match=rf"'tile' \(Tile\).*{message}"):
        tile(xp, params).setup([random_blob((2, 3, 2), xp)], blobs(1, xp))


# --- Reduction -------------------------------------------------------------------------------

OPS = ["SUM", "ASUM", "SUMSQ", "MEAN"]


def reduction(xp, params: str):
    return make_layer(
        f'name: "red" type: "Reduction" bottom: "x" top: "y" reduction_param {{ {params} }}', xp
    )


def reduction_reference(x: np.ndarray, op: str, axis: int, coeff: float) -> np.ndarray:
    out = np.zeros(x.shape[:axis])
    for lead in np.ndindex(*x.shape[:axis]):
        block = x[lead]
        total = 0.0
        for index in np.ndindex(*block.shape):
            v = block[index]
            total += abs(v) if op == "ASUM" else v * v if op == "SUMSQ" else v
        if op == "MEAN":
            total /= block.size
        out[lead] = coeff * total
    return out


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("axis_text", "axis"), [("", 0), ("axis: 1", 1), ("axis: 2", 2), ("axis: -1", 3)])
@pytest.mark.parametrize("coeff", [1.0, -2.5])
def test_reduction_forward_matches_reference(xp, op, axis_text, axis, coeff):
    bottom, top = random_blob((2, 3, 2, 2), xp), blobs(1, xp)
    layer = reduction(xp, f"operation: {op} {axis_text} coeff: {coeff}")
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    want = reduction_reference(host(bottom.data), op, axis, coeff)
    assert top[0].shape == (2, 3, 2, 2)[:axis]
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-12)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("params", ["", "axis: 1 coeff: 2", "axis: -1 coeff: -0.5"])
def test_reduction_gradient(xp, op, params):
    checker = GradientChecker(kink=0.0, kink_range=0.02 if op == "ASUM" else -1.0)
    checker.check(reduction(xp, f"operation: {op} {params}"), [random_blob((2, 3, 2), xp)], blobs(1, xp))


def test_reduction_asum_gradient_is_zero_at_zero(xp):
    bottom, top = random_blob((1, 3), xp), blobs(1, xp)
    bottom.data[...] = xp.asarray([[-2.0, 0.0, 3.0]])
    layer = reduction(xp, "operation: ASUM axis: 1")
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    top[0].diff[...] = 2
    layer.backward(top, [True], [bottom])
    np.testing.assert_array_equal(host(bottom.diff), [[-2.0, 0.0, 2.0]])  # Caffe's sign(0) is 0


def test_reduction_rejects_an_axis_out_of_range(xp):
    with pytest.raises(LayerSetupError, match=r"'red' \(Reduction\).*out of range"):
        reduction(xp, "axis: 3").setup([random_blob((2, 3), xp)], blobs(1, xp))


# --- ArgMax ----------------------------------------------------------------------------------


def argmax(xp, params: str = ""):
    return make_layer(f'name: "am" type: "ArgMax" bottom: "x" top: "y" argmax_param {{ {params} }}', xp)


def ranked(values: list[float], k: int) -> list[tuple[float, int]]:
    """Caffe's partial_sort of (value, index) pairs with std::greater: ties rank the higher index first."""
    return sorted(((v, j) for j, v in enumerate(values)), reverse=True)[:k]


def argmax_reference_flat(x: np.ndarray, k: int, out_max_val: bool) -> np.ndarray:
    flat = x.reshape(x.shape[0], -1)
    out = np.zeros((x.shape[0], 2 if out_max_val else 1, k))
    for n in range(x.shape[0]):
        for j, (value, index) in enumerate(ranked(list(flat[n]), k)):
            out[n, 0, j] = index
            if out_max_val:
                out[n, 1, j] = value
    return out


def argmax_reference_axis(x: np.ndarray, axis: int, k: int, out_max_val: bool) -> np.ndarray:
    shape = list(x.shape)
    shape[axis] = k
    out = np.zeros(shape)
    others = [d for i, d in enumerate(x.shape) if i != axis]
    for rest in np.ndindex(*others):
        line = [x[rest[:axis] + (j,) + rest[axis:]] for j in range(x.shape[axis])]
        for j, (value, index) in enumerate(ranked(line, k)):
            out[rest[:axis] + (j,) + rest[axis:]] = value if out_max_val else index
    return out


@pytest.mark.parametrize(
    ("params", "k", "out_max_val"),
    [
        ("", 1, False),
        ("top_k: 3", 3, False),
        ("out_max_val: true top_k: 2", 2, True),
        ("out_max_val: true", 1, True),
    ],
)
def test_argmax_over_each_sample(xp, params, k, out_max_val):
    bottom, top = random_blob((3, 2, 2, 2), xp), blobs(1, xp)
    layer = argmax(xp, params)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    assert top[0].shape == (3, 2 if out_max_val else 1, k, 1)  # padded to the bottom's 4 axes
    want = argmax_reference_flat(host(bottom.data), k, out_max_val)
    np.testing.assert_array_equal(host(top[0].data).reshape(want.shape), want)


def test_argmax_of_a_2d_bottom_has_three_axes(xp):
    top = blobs(1, xp)
    argmax(xp, "top_k: 2").setup([random_blob((4, 5), xp)], top)
    assert top[0].shape == (4, 1, 2)


@pytest.mark.parametrize(
    ("params", "axis", "k", "out_max_val"),
    [
        ("axis: 1", 1, 1, False),
        ("axis: 2 top_k: 2", 2, 2, False),
        ("axis: -1 top_k: 3 out_max_val: true", 2, 3, True),
        ("axis: 0", 0, 1, False),
    ],
)
def test_argmax_along_an_axis(xp, params, axis, k, out_max_val):
    bottom, top = random_blob((2, 4, 3), xp), blobs(1, xp)
    layer = argmax(xp, params)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    np.testing.assert_array_equal(
        host(top[0].data), argmax_reference_axis(host(bottom.data), axis, k, out_max_val)
    )


@pytest.mark.parametrize("params", ["", "top_k: 3", "axis: 1 top_k: 2"])
def test_argmax_ties_rank_the_higher_index_first(xp, params):
    bottom, top = random_blob((2, 5), xp), blobs(1, xp)
    bottom.data[...] = xp.asarray([[1.0, 3.0, 2.0, 3.0, 3.0], [0.0, 0.0, -1.0, 0.0, -2.0]])
    layer = argmax(xp, params)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    k = 2 if "axis" in params else (3 if "top_k" in params else 1)
    want = [[4, 3, 1][:k], [3, 1, 0][:k]]
    np.testing.assert_array_equal(host(top[0].data).reshape(2, k), want)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("top_k: 0", "top_k must not be less than 1"),
        ("top_k: 7", r"top_k \(7\) must not exceed"),
        ("axis: 1 top_k: 4", r"top_k \(4\) must not exceed"),
        ("axis: 3", "out of range"),
    ],
)
def test_argmax_rejects_bad_parameters(xp, params, message):
    with pytest.raises(LayerSetupError, match=rf"'am' \(ArgMax\).*{message}"):
        argmax(xp, params).setup([random_blob((2, 3, 2), xp)], blobs(1, xp))


def test_argmax_has_no_gradient(xp):
    bottom, top = random_blob((2, 3), xp), blobs(1, xp)
    layer = argmax(xp)
    layer.setup([bottom], top)
    layer.backward(top, [False], [bottom])  # nothing asked: fine
    with pytest.raises(NotImplementedError, match="ArgMax"):
        layer.backward(top, [True], [bottom])
