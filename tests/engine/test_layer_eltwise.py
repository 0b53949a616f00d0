"""Eltwise SUM / PROD / MAX: naive references, Caffe's tie rule, gradients, CHECKs and the golden."""

from __future__ import annotations

import numpy as np
import pytest
from tests_support import close

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob

SHAPE = (2, 3, 2)


def eltwise(xp, params: str, bottoms: int = 3, dtype=np.float64):
    bottom_text = " ".join(f'bottom: "b{i}"' for i in range(bottoms))
    text = f'name: "elt" type: "Eltwise" {bottom_text} top: "y" eltwise_param {{ {params} }}'
    return make_layer(text, xp, dtype)


def three_bottoms(xp, low=-1.0, high=1.0):
    return [random_blob(SHAPE, xp, low=low, high=high, seed=10 + i) for i in range(3)]


def run(layer, bottom, xp):
    top = blobs(1, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    return top


def reference(arrays, op, coeffs=None):
    out = np.zeros(arrays[0].shape)
    for index in np.ndindex(*out.shape):
        values = [a[index] for a in arrays]
        if op == "SUM":
            out[index] = sum(c * v for c, v in zip(coeffs or [1] * len(values), values))
        elif op == "PROD":
            out[index] = np.prod(values)
        else:
            out[index] = max(values)
    return out


@pytest.mark.parametrize(
    ("params", "op", "coeffs"),
    [
        ("operation: SUM", "SUM", None),
        ("", "SUM", None),  # SUM is the default
        ("operation: SUM coeff: 1 coeff: -0.5 coeff: 2", "SUM", [1, -0.5, 2]),
        ("operation: PROD", "PROD", None),
        ("operation: MAX", "MAX", None),
    ],
)
def test_eltwise_forward_matches_reference(xp, params, op, coeffs):
    bottom = three_bottoms(xp)
    top = run(eltwise(xp, params), bottom, xp)
    assert top[0].shape == SHAPE
    np.testing.assert_allclose(
        host(top[0].data), reference([host(b.data) for b in bottom], op, coeffs), rtol=1e-12
    )


def max_grads(values, xp):
    """Forward MAX on one-element bottoms with the given values; return which bottom got dE/dy."""
    bottom = [random_blob((1,), xp) for _ in values]
    for b, v in zip(bottom, values):
        b.data[...] = v
    layer = eltwise(xp, "operation: MAX", len(values))
    top = run(layer, bottom, xp)
    top[0].diff[...] = 1
    layer.backward(top, [True] * len(values), bottom)
    return [float(host(b.diff)[0]) for b in bottom]


def test_eltwise_max_ties_follow_caffe(xp):
    # Caffe compares bottoms 0 and 1 with a > b (a tie goes to bottom 1); later bottoms must be
    # strictly greater than the running max to take over.
    assert max_grads([2.0, 2.0, 1.0], xp) == [0.0, 1.0, 0.0]
    assert max_grads([2.0, 1.0, 2.0], xp) == [1.0, 0.0, 0.0]
    assert max_grads([1.0, 2.0, 2.0], xp) == [0.0, 1.0, 0.0]
    assert max_grads([1.0, 2.0, 3.0], xp) == [0.0, 0.0, 1.0]
    assert max_grads([3.0, 2.0, 1.0], xp) == [1.0, 0.0, 0.0]


def test_eltwise_max_nan_follows_caffes_comparisons(xp):
    """Caffe's forward is top = a > b ? a : b, then top = c > top ? c : top: comparisons with NaN are
    false, so a NaN in bottom 0 loses to bottom 1, a NaN in bottom 1 wins over bottom 0 (and then
    stays, as nothing compares greater than NaN), and a NaN in a later bottom never wins."""

    def forward(values):
        bottom = [random_blob((1,), xp) for _ in values]
        for b, v in zip(bottom, values):
            b.data[...] = v
        return float(host(run(eltwise(xp, "operation: MAX", len(values)), bottom, xp)[0].data)[0])

    assert forward([np.nan, 1.0, 0.5]) == 1.0
    assert np.isnan(forward([1.0, np.nan, 5.0]))
    assert forward([1.0, 2.0, np.nan]) == 2.0
    assert max_grads([np.nan, 1.0, 0.5], xp) == [0.0, 1.0, 0.0]
    assert max_grads([1.0, 2.0, np.nan], xp) == [0.0, 1.0, 0.0]


def test_eltwise_max_backward_routes_to_the_winner(xp):
    bottom = three_bottoms(xp)
    layer = eltwise(xp, "operation: MAX")
    top = run(layer, bottom, xp)
    dy = np.random.default_rng(3).normal(size=SHAPE)
    top[0].diff[...] = xp.asarray(dy)
    layer.backward(top, [True, True, True], bottom)
    stacked = np.stack([host(b.data) for b in bottom])
    winner = stacked.argmax(axis=0)  # values are distinct, so there are no ties here
    for k, b in enumerate(bottom):
        np.testing.assert_array_equal(host(b.diff), np.where(winner == k, dy, 0.0))


@pytest.mark.parametrize(
    "params",
    [
        "operation: SUM",
        "operation: SUM coeff: 1 coeff: -0.5 coeff: 2",
        "operation: PROD",
        "operation: PROD stable_prod_grad: false",
        "operation: MAX",
    ],
)
def test_eltwise_gradient(xp, params):
    # Values in [0.5, 1.5] keep PROD's unstable division away from zero; random_blob's seeds give
    # distinct values, so MAX has no ties within the finite-difference step.
    bottom = three_bottoms(xp, 0.5, 1.5) if "PROD" in params else three_bottoms(xp)
    if "MAX" in params:
        stacked = np.sort(np.stack([host(b.data) for b in bottom]), axis=0)
        assert np.diff(stacked, axis=0).min() > 2e-2  # no two bottoms within a step of each other
    GradientChecker().check(eltwise(xp, params), bottom, blobs(1, xp))


def test_eltwise_stable_prod_gradient_survives_a_zero_input(xp):
    a, b = random_blob((2,), xp), random_blob((2,), xp)
    a.data[...] = xp.asarray([0.0, 2.0])
    b.data[...] = xp.asarray([3.0, 4.0])
    layer = eltwise(xp, "operation: PROD", bottoms=2)
    top = run(layer, [a, b], xp)
    top[0].diff[...] = xp.asarray([0.5, -1.0])
    layer.backward(top, [True, True], [a, b])
    np.testing.assert_array_equal(host(a.diff), [3.0 * 0.5, 4.0 * -1.0])  # d(ab)/da = b, even where a = 0
    np.testing.assert_array_equal(host(b.diff), [0.0, 2.0 * -1.0])


def test_eltwise_sum_in_place_matches_out_of_place(xp):
    bottom = three_bottoms(xp)
    params = "operation: SUM coeff: 2 coeff: 1 coeff: -1"
    expected = host(run(eltwise(xp, params), bottom, xp)[0].data).copy()
    layer = eltwise(xp, params)
    layer.setup(bottom, [bottom[0]])
    layer.forward(bottom, [bottom[0]])
    np.testing.assert_allclose(host(bottom[0].data), expected, rtol=1e-12)


def test_eltwise_backward_skips_bottoms_not_asked_for(xp):
    bottom = three_bottoms(xp)
    layer = eltwise(xp, "operation: SUM")
    top = run(layer, bottom, xp)
    top[0].diff[...] = 1
    bottom[1].diff[...] = 42
    layer.backward(top, [True, False, True], bottom)
    np.testing.assert_array_equal(host(bottom[1].diff), np.full(SHAPE, 42.0))
    np.testing.assert_array_equal(host(bottom[2].diff), np.ones(SHAPE))


@pytest.mark.parametrize(
    ("params", "shapes", "message"),
    [
        ("coeff: 1 coeff: 2", [SHAPE] * 3, "one coefficient per bottom"),
        ("operation: PROD coeff: 1 coeff: 2", [SHAPE] * 2, "only takes coefficients for summation"),
        ("operation: MAX", [SHAPE, (2, 3, 3)], "same shape"),
        ("", [SHAPE], "at least 2 bottom"),
    ],
)
def test_eltwise_rejects_bad_setups(xp, params, shapes, message):
    bottom = [random_blob(s, xp) for s in shapes]
    with pytest.raises(LayerSetupError, match=rf"'elt' \(Eltwise\).*{message}"):
        eltwise(xp, params, len(shapes)).setup(bottom, blobs(1, xp))


def test_eltwise_sum_matches_caffe_golden(xp, goldens):
    io = np.load(goldens / "layers" / "eltwise_sum" / "io.npz")
    bottom = [random_blob(io["data/a"].shape, xp, np.float32) for _ in range(2)]
    for blob, name in zip(bottom, ("a", "b")):
        blob.data[...] = xp.asarray(io[f"data/{name}"])
    layer = eltwise(xp, "operation: SUM coeff: 0.5 coeff: 2", bottoms=2, dtype=np.float32)
    top = run(layer, bottom, xp)
    assert close(host(top[0].data), io["data/sum"], 1e-6)
    # EuclideanLoss(sum, target) sends (sum - target) / num back to sum.
    top[0].diff[...] = xp.asarray((io["data/sum"] - io["data/target"]) / io["data/sum"].shape[0])
    layer.backward(top, [True, True], bottom)
    for blob, name in zip(bottom, ("a", "b")):
        assert close(host(blob.diff), io[f"diff/{name}"], 1e-5)


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("into", [None, 0, 1, 2])
def test_eltwise_plain_sum_straight_into_the_top(xp, count, into):
    """SUM without coefficients adds straight into the top, which may be any bottom (in place): the
    sum (b0 + b1) + b2 ... as Caffe's order, to the bit."""
    if into is not None and into >= count:
        pytest.skip("no such bottom")
    bottom = [random_blob(SHAPE, xp, seed=20 + i) for i in range(count)]
    arrays = [host(b.data).copy() for b in bottom]
    want = arrays[0] + arrays[1]
    for a in arrays[2:]:
        want = want + a
    layer = eltwise(xp, "operation: SUM", count)
    top = blobs(1, xp) if into is None else [bottom[into]]
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    np.testing.assert_array_equal(host(top[0].data), want)
