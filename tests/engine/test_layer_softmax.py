"""Softmax: naive reference over any axis, stability on large inputs, in place, gradient, golden."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests_support import close

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob


def softmax(xp, params: str = "", dtype=np.float64):
    text = f'name: "sm" type: "Softmax" bottom: "x" top: "y" softmax_param {{ {params} }}'
    return make_layer(text, xp, dtype)


def reference(x: np.ndarray, axis: int) -> np.ndarray:
    out = np.zeros(x.shape)
    others = [d for i, d in enumerate(x.shape) if i != axis]
    for rest in np.ndindex(*others):
        line = [rest[:axis] + (j,) + rest[axis:] for j in range(x.shape[axis])]
        top = max(x[i] for i in line)
        total = sum(math.exp(x[i] - top) for i in line)
        for i in line:
            out[i] = math.exp(x[i] - top) / total
    return out


@pytest.mark.parametrize(("params", "axis"), [("", 1), ("axis: 0", 0), ("axis: 2", 2), ("axis: -1", 3)])
def test_softmax_forward_matches_reference(xp, params, axis):
    bottom, top = random_blob((2, 3, 2, 4), xp, low=-3, high=3), blobs(1, xp)
    layer = softmax(xp, params)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    np.testing.assert_allclose(host(top[0].data), reference(host(bottom.data), axis), rtol=1e-12)


def test_softmax_is_stable_for_large_inputs(xp):
    bottom, top = random_blob((2, 3), xp, dtype=np.float32), blobs(1, xp, np.float32)
    bottom.data[...] = xp.asarray(
        np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    )
    layer = softmax(xp, dtype=np.float32)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    y = host(top[0].data)
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y, reference(host(bottom.data).astype(np.float64), 1), rtol=1e-6)


@pytest.mark.parametrize("params", ["", "axis: 0", "axis: -1"])
def test_softmax_gradient(xp, params):
    GradientChecker().check(softmax(xp, params), [random_blob((2, 3, 2), xp, low=-2, high=2)], blobs(1, xp))


def test_softmax_in_place_matches_out_of_place(xp):
    x = random_blob((2, 4, 3), xp, low=-2, high=2)
    dy = np.random.default_rng(4).normal(size=(2, 4, 3))
    layer, top = softmax(xp), blobs(1, xp)
    layer.setup([x], top)
    layer.forward([x], top)
    top[0].diff[...] = xp.asarray(dy)
    layer.backward(top, [True], [x])
    want_y, want_dx = host(top[0].data).copy(), host(x.diff).copy()

    blob = random_blob((2, 4, 3), xp, low=-2, high=2)  # same seed: same values as x
    layer = softmax(xp)
    layer.setup([blob], [blob])
    layer.forward([blob], [blob])
    np.testing.assert_allclose(host(blob.data), want_y, rtol=1e-12)
    blob.diff[...] = xp.asarray(dy)
    layer.backward([blob], [True], [blob])
    np.testing.assert_allclose(host(blob.diff), want_dx, rtol=1e-12)


def test_softmax_rejects_an_axis_out_of_range(xp):
    with pytest.raises(LayerSetupError, match=r"'sm' \(Softmax\).*out of range"):
        softmax(xp, "axis: 2").setup([random_blob((2, 3), xp)], blobs(1, xp))


def test_softmax_matches_caffe_golden(xp, goldens):
    io = np.load(goldens / "layers" / "softmax" / "io.npz")
    bottom, top = random_blob(io["data/data"].shape, xp, np.float32), blobs(1, xp, np.float32)
    bottom.data[...] = xp.asarray(io["data/data"])
    layer = softmax(xp, dtype=np.float32)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    assert close(host(top[0].data), io["data/prob"], 1e-5)
    # EuclideanLoss(prob, target) sends (prob - target) / num back to prob.
    top[0].diff[...] = xp.asarray((io["data/prob"] - io["data/target"]) / io["data/prob"].shape[0])
    layer.backward(top, [True], [bottom])
    assert close(host(bottom.diff), io["diff/data"], 1e-4)
