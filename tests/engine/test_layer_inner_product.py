"""InnerProduct: the matrix product over flattened axes, transpose, gradients, CHECKs, golden."""

from __future__ import annotations

import numpy as np
import pytest
from vision_support import replay_golden_layer

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob

FILLERS = 'weight_filler { type: "gaussian" std: 0.5 } bias_filler { type: "uniform" min: -1 max: 1 }'


def ip_text(**fields: object) -> str:
    body = " ".join(f"{k}: {v}" for k, v in fields.items())
    return f'name: "ip" type: "InnerProduct" inner_product_param {{ {body} {FILLERS} }}'


def run(layer, shape, xp=np, seed=2):
    bottom, top = [random_blob(shape, xp, seed=seed)], blobs(1, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    return bottom[0], top[0]


@pytest.mark.parametrize(
    "fields, shape, out",
    [
        ({"num_output": 10}, (2, 3, 4, 5), (2, 10)),  # Caffe's TestSetUp
        ({"num_output": 4, "axis": 2}, (2, 3, 4, 5), (2, 3, 4)),
        ({"num_output": 3, "axis": -1}, (2, 3, 5), (2, 3, 3)),
        ({"num_output": 2, "axis": 0}, (3, 4), (2,)),
        ({"num_output": 3, "bias_term": "false"}, (4, 6), (4, 3)),
    ],
)
def test_forward_is_a_matrix_product(xp, fields, shape, out):
    layer = make_layer(ip_text(**fields), xp)
    x, y = run(layer, shape, xp)
    axis = fields.get("axis", 1) % len(shape)
    w = host(layer.blobs[0].data)
    want = host(x.data).reshape(int(np.prod(shape[:axis])), -1) @ w.T
    if fields.get("bias_term") != "false":
        want += host(layer.blobs[1].data)
    else:
        assert len(layer.blobs) == 1
    assert w.shape == (fields["num_output"], int(np.prod(shape[axis:])))
    assert y.shape == out
    np.testing.assert_allclose(host(y.data).reshape(want.shape), want, rtol=1e-12)


def test_transpose_stores_the_weight_transposed(xp):
    """Caffe's TestForwardTranspose: a transposed layer with W^T computes what the plain one does."""
    plain = make_layer(ip_text(num_output=4), xp)
    x, y = run(plain, (2, 3, 5), xp)
    flipped = make_layer(ip_text(num_output=4, transpose="true"), xp)
    _, y_flipped = run(flipped, (2, 3, 5), xp)
    assert flipped.blobs[0].shape == (15, 4)
    flipped.blobs[0].data[...] = plain.blobs[0].data.T
    flipped.blobs[1].data[...] = plain.blobs[1].data
    flipped.forward([x], [y_flipped])
    np.testing.assert_allclose(host(y_flipped.data), host(y.data), rtol=1e-12)


@pytest.mark.parametrize(
    "fields, shape",
    [
        ({"num_output": 3}, (2, 2, 2, 2)),
        ({"num_output": 3, "transpose": "true"}, (2, 5)),
        ({"num_output": 2, "axis": 2, "bias_term": "false"}, (2, 2, 3)),
    ],
)
def test_gradients(xp, fields, shape):
    layer = make_layer(ip_text(**fields), xp)
    GradientChecker().check(layer, [random_blob(shape, xp)], blobs(1, xp))


def test_parameter_gradients_accumulate(xp):
    layer = make_layer(ip_text(num_output=3), xp)
    x, y = run(layer, (4, 5), xp)
    y.diff[...] = 1
    layer.backward([y], [False], [x])
    layer.backward([y], [False], [x])
    np.testing.assert_allclose(host(layer.blobs[1].diff), [8, 8, 8])
    np.testing.assert_allclose(host(layer.blobs[0].diff), np.tile(2 * host(x.data).sum(0), (3, 1)))
    assert not host(x.diff).any()  # propagate_down false: the bottom diff is left alone


def test_caffe_checks():
    with pytest.raises(LayerSetupError, match="incompatible"):
        layer = make_layer(ip_text(num_output=3))
        x, y = run(layer, (2, 6))
        layer.reshape([random_blob((2, 7))], [y])
    with pytest.raises(LayerSetupError, match="num_output"):
        run(make_layer(ip_text(num_output=0)), (2, 6))
    with pytest.raises(LayerSetupError, match="axis"):
        run(make_layer(ip_text(num_output=2, axis=3)), (2, 6))
    weights = " data: 0" * 10
    text = (
        ip_text(num_output=2)
        + f" blobs {{ shape {{ dim: 2 dim: 5 }}{weights} }} blobs {{ shape {{ dim: 2 }} data: 0 data: 0 }}"
    )
    with pytest.raises(LayerSetupError, match="incorrect weight shape") as info:
        run(make_layer(text), (2, 6))
    assert "'ip'" in str(info.value)


def test_matches_caffe_golden(xp, goldens):
    replay_golden_layer(goldens, "inner_product", "ip", xp)


@pytest.mark.parametrize("transpose", ["false", "true"])
def test_large_weight_gradient_by_blocks_of_rows(monkeypatch, transpose):
    """A weight past BLOCK_BYTES gets its gradient a block of rows at a time: still dW += dy^T x."""
    from engine.layers import inner_product

    monkeypatch.setattr(inner_product, "BLOCK_BYTES", 3 * 7 * 8)  # 3 rows of 7 float64 a block
    layer = make_layer(ip_text(num_output=11, transpose=transpose))
    x, y = run(layer, (4, 7))
    y.diff[...] = np.random.default_rng(1).standard_normal(y.shape)
    layer.blobs[0].diff[...] = 0.5
    layer.backward([y], [True], [x])
    want = y.diff.T @ x.data.reshape(4, 7)
    got = layer.blobs[0].diff.reshape(7, 11).T if transpose == "true" else layer.blobs[0].diff
    np.testing.assert_allclose(got, 0.5 + want, rtol=1e-12)
