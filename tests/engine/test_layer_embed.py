"""Embed: lookup against a naive reference, fillers, parameter gradients, id checks."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob

IDS = [[0, 3, 3], [4, 1, 0]]  # repeated ids: their gradients must add up


def embed(xp, params: str = "num_output: 3 input_dim: 5"):
    return make_layer(f'name: "emb" type: "Embed" bottom: "x" top: "y" embed_param {{ {params} }}', xp)


def id_blob(xp, ids=IDS):
    blob = random_blob(np.shape(ids), xp)
    blob.data[...] = xp.asarray(np.asarray(ids, np.float64))
    return blob


def set_params(layer, xp, seed=0):
    rng = np.random.default_rng(seed)
    for blob in layer.blobs:
        blob.data[...] = xp.asarray(rng.normal(size=blob.shape))


@pytest.mark.parametrize("bias", [True, False])
def test_embed_forward_matches_reference(xp, bias):
    layer = embed(xp, f"num_output: 3 input_dim: 5 bias_term: {str(bias).lower()}")
    bottom, top = id_blob(xp), blobs(1, xp)
    layer.setup([bottom], top)
    assert [b.shape for b in layer.blobs] == ([(5, 3), (3,)] if bias else [(5, 3)])
    set_params(layer, xp)
    layer.forward([bottom], top)
    w = host(layer.blobs[0].data)
    b = host(layer.blobs[1].data) if bias else np.zeros(3)
    want = np.zeros((2, 3, 3))
    for i in range(2):
        for j in range(3):
            for k in range(3):
                want[i, j, k] = w[IDS[i][j], k] + b[k]
    assert top[0].shape == (2, 3, 3)
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-12)


def test_embed_fills_its_params_with_the_fillers(xp):
    params = (
        'num_output: 4 input_dim: 6 weight_filler { type: "uniform" min: 2 max: 3 } '
        'bias_filler { type: "constant" value: -1 }'
    )
    layer = embed(xp, params)
    layer.setup([id_blob(xp)], blobs(1, xp))
    w = host(layer.blobs[0].data)
    assert w.min() >= 2 and w.max() <= 3 and np.unique(w).size > 1
    np.testing.assert_array_equal(host(layer.blobs[1].data), np.full(4, -1.0))


def test_embed_gradient_for_weights_and_bias(xp):
    layer = embed(
        xp, 'num_output: 3 input_dim: 5 weight_filler { type: "gaussian" } bias_filler { type: "gaussian" }'
    )
    GradientChecker().check(layer, [id_blob(xp)], blobs(1, xp), check_bottom=[])


def test_embed_accumulates_param_diffs_and_sums_repeated_ids(xp):
    layer = embed(xp)
    bottom, top = id_blob(xp), blobs(1, xp)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    dy = np.random.default_rng(2).normal(size=(2, 3, 3))
    top[0].diff[...] = xp.asarray(dy)
    layer.backward(top, [False], [bottom])
    layer.backward(top, [False], [bottom])  # a second pass adds to the diffs
    want = np.zeros((5, 3))
    for i in range(2):
        for j in range(3):
            want[IDS[i][j]] += dy[i, j]
    np.testing.assert_allclose(host(layer.blobs[0].diff), 2 * want, rtol=1e-12)
    np.testing.assert_allclose(host(layer.blobs[1].diff), 2 * dy.reshape(-1, 3).sum(0), rtol=1e-12)


def test_embed_skips_params_that_do_not_learn(xp):
    layer = embed(xp)
    bottom, top = id_blob(xp), blobs(1, xp)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    top[0].diff[...] = 1
    layer.param_propagate_down = [False, True]
    layer.backward(top, [False], [bottom])
    np.testing.assert_array_equal(host(layer.blobs[0].diff), np.zeros((5, 3)))
    np.testing.assert_array_equal(host(layer.blobs[1].diff), np.full(3, 6.0))


@pytest.mark.parametrize("ids", [[[0, 5]], [[-1, 2]], [[1.5, 2]]])
def test_embed_rejects_ids_that_are_not_valid_integers(xp, ids):
    layer = embed(xp)
    bottom, top = id_blob(xp, ids), blobs(1, xp)
    layer.setup([bottom], top)
    with pytest.raises(LayerSetupError, match=r"'emb' \(Embed\).*integer ids in \[0, 5\)"):
        layer.forward([bottom], top)


def test_embed_gives_no_gradient_to_its_ids(xp):
    layer = embed(xp)
    bottom, top = id_blob(xp), blobs(1, xp)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    assert not layer.allow_force_backward(0)
    with pytest.raises(LayerSetupError, match="cannot backpropagate to the input ids"):
        layer.backward(top, [True], [bottom])


@pytest.mark.parametrize(
    ("params", "message"),
    [("input_dim: 5", "num_output must be positive"), ("num_output: 3", "input_dim must be positive")],
)
def test_embed_rejects_bad_parameters(xp, params, message):
    with pytest.raises(LayerSetupError, match=rf"'emb' \(Embed\).*{message}"):
        embed(xp, params).setup([id_blob(xp)], blobs(1, xp))
