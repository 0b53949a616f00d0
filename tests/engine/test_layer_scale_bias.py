"""Scale and Bias (learned or second-bottom operand, any axis/num_axes, bias_term) and MVN."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob

SHAPE = (2, 3, 4, 2)

# (scale_param / bias_param text, the operand's shape, the bottom[0] axis it starts at)
LEARNED = {
    "default": ("", (3,), 1),
    "axis0_all": ("axis: 0 num_axes: -1", SHAPE, 0),
    "axis1_two": ("axis: 1 num_axes: 2", (3, 4), 1),
    "last_axis": ("axis: -1", (2,), 3),
    "scalar": ("num_axes: 0", (), 0),
    "axis2_rest": ("axis: 2 num_axes: -1", (4, 2), 2),
}
# (param text, bottom[1] shape, start axis)
SECOND_BOTTOM = {
    "channels": ("", (3,), 1),
    "leading": ("axis: 0", (2, 3), 0),
    "spatial": ("axis: 2", (4, 2), 2),
    "scalar": ("axis: 2", (), 0),
    "scalar_ignores_axis": ("axis: 9", (), 0),
    "same_shape": ("axis: 0", SHAPE, 0),
    "negative_axis": ("axis: -3", (3, 4), 1),
}


def broadcast_reference(x: np.ndarray, operand: np.ndarray, start: int, op) -> np.ndarray:
    """Element by element: the operand is indexed by the axes start .. start + operand.ndim of x."""
    y = np.empty_like(x)
    for index in np.ndindex(x.shape):
        y[index] = op(x[index], operand[index[start : start + operand.ndim]])
    return y


def multiply(a, b):
    return a * b


def add(a, b):
    return a + b


def setup_forward(layer, bottom, top=None):
    top = blobs(1, bottom[0].xp, bottom[0].dtype) if top is None else top
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    return top


# --- learned operand -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(LEARNED))
@pytest.mark.parametrize("kind", ["Scale", "Bias"])
def test_learned_operand_forward(xp, kind, name):
    text, shape, start = LEARNED[name]
    filler = 'filler { type: "uniform" min: -2 max: 2 }'
    layer = make_layer(f'type: "{kind}" {kind.lower()}_param {{ {text} {filler} }}', xp)
    bottom = [random_blob(SHAPE, xp)]
    top = setup_forward(layer, bottom)
    assert len(layer.blobs) == 1 and layer.blobs[0].shape == shape
    operand = host(layer.blobs[0].data)
    assert np.abs(operand).max() > 0
    op = multiply if kind == "Scale" else add
    want = broadcast_reference(host(bottom[0].data), operand, start, op)
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-12)


@pytest.mark.parametrize("name", list(LEARNED))
@pytest.mark.parametrize("kind", ["Scale", "Bias"])
def test_learned_operand_gradient(xp, kind, name):
    text, _, _ = LEARNED[name]
    filler = 'filler { type: "uniform" min: -2 max: 2 }'
    layer = make_layer(f'type: "{kind}" {kind.lower()}_param {{ {text} {filler} }}', xp)
    GradientChecker().check(layer, [random_blob(SHAPE, xp)], blobs(1, xp))


def test_default_fillers_are_one_for_scale_and_zero_for_bias(xp):
    scale = make_layer('type: "Scale" scale_param { bias_term: true }', xp)
    bias = make_layer('type: "Bias"', xp)
    bottom = [random_blob(SHAPE, xp)]
    scaled, biased = setup_forward(scale, bottom), setup_forward(bias, bottom)
    np.testing.assert_array_equal(host(scale.blobs[0].data), np.ones(3))
    np.testing.assert_array_equal(host(scale.blobs[1].data), np.zeros(3))
    np.testing.assert_array_equal(host(bias.blobs[0].data), np.zeros(3))
    np.testing.assert_array_equal(host(scaled[0].data), host(bottom[0].data))
    np.testing.assert_array_equal(host(biased[0].data), host(bottom[0].data))


@pytest.mark.parametrize("name", ["default", "axis1_two", "scalar"])
def test_scale_with_bias_term(xp, name):
    text, shape, start = LEARNED[name]
    layer = make_layer(
        f'type: "Scale" scale_param {{ {text} bias_term: true filler {{ type: "uniform" min: -2 max: 2 }} '
        'bias_filler { type: "constant" value: 0.75 } }',
        xp,
    )
    bottom = [random_blob(SHAPE, xp)]
    top = setup_forward(layer, bottom)
    assert [b.shape for b in layer.blobs] == [shape, shape]
    np.testing.assert_array_equal(host(layer.blobs[1].data), np.full(shape, 0.75))
    want = broadcast_reference(host(bottom[0].data), host(layer.blobs[0].data), start, multiply) + 0.75
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-12)
    layer.blobs[1].data[...] = random_blob(shape, xp, seed=3).data  # a non-constant bias for the check
    GradientChecker().check(layer, bottom, blobs(1, xp))


@pytest.mark.parametrize("kind", ["Scale", "Bias"])
def test_param_gradients_accumulate(xp, kind):
    layer = make_layer(f'type: "{kind}"', xp)
    bottom = [random_blob(SHAPE, xp)]
    top = setup_forward(layer, bottom)
    top[0].diff[...] = random_blob(SHAPE, xp, seed=2).data
    layer.backward(top, [False], bottom)
    once = host(layer.blobs[0].diff).copy()
    assert np.abs(once).max() > 0
    layer.backward(top, [False], bottom)
    np.testing.assert_allclose(host(layer.blobs[0].diff), 2 * once, rtol=1e-12)


def test_loaded_blobs_are_kept(xp):
    layer = make_layer(
        'type: "Scale" scale_param { bias_term: true } '
        "blobs { shape { dim: 3 } data: 1 data: 2 data: 3 } "
        "blobs { shape { dim: 3 } data: 4 data: 5 data: 6 }",
        xp,
    )
    bottom = [random_blob(SHAPE, xp)]
    top = setup_forward(layer, bottom)
    np.testing.assert_array_equal(host(layer.blobs[1].data), [4, 5, 6])
    assert layer.bias_layer.blobs[0] is layer.blobs[1]
    want = broadcast_reference(host(bottom[0].data), np.array([1.0, 2, 3]), 1, multiply)
    want = broadcast_reference(want, np.array([4.0, 5, 6]), 1, add)
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-12)


# --- operand from bottom[1] ------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SECOND_BOTTOM))
@pytest.mark.parametrize("kind", ["Scale", "Bias"])
def test_second_bottom_forward_and_gradient(xp, kind, name):
    text, shape, start = SECOND_BOTTOM[name]
    layer = make_layer(f'type: "{kind}" {kind.lower()}_param {{ {text} }}', xp)
    bottom = [random_blob(SHAPE, xp), random_blob(shape, xp, low=-2, high=2, seed=11)]
    top = setup_forward(layer, bottom)
    assert layer.blobs == []
    op = multiply if kind == "Scale" else add
    want = broadcast_reference(host(bottom[0].data), host(bottom[1].data), start, op)
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-12)
    GradientChecker().check(layer, bottom, blobs(1, xp))


def test_second_bottom_gradient_is_overwritten_not_accumulated(xp):
    layer = make_layer('type: "Scale"', xp)
    bottom = [random_blob(SHAPE, xp), random_blob((3,), xp, seed=4)]
    top = setup_forward(layer, bottom)
    top[0].diff[...] = 1
    layer.backward(top, [True, True], bottom)
    layer.backward(top, [True, True], bottom)
    np.testing.assert_allclose(host(bottom[1].diff), host(bottom[0].data).sum(axis=(0, 2, 3)), rtol=1e-12)


def test_scale_from_second_bottom_with_learned_bias(xp):
    layer = make_layer('type: "Scale" scale_param { axis: 0 bias_term: true }', xp)
    bottom = [random_blob(SHAPE, xp), random_blob((2, 3), xp, seed=5)]
    setup_forward(layer, bottom)
    assert [b.shape for b in layer.blobs] == [(2, 3)]  # the bias spans bottom[1]'s axes
    layer.blobs[0].data[...] = random_blob((2, 3), xp, seed=6).data
    GradientChecker().check(layer, bottom, blobs(1, xp))


# --- in place --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, extra_bottom",
    [
        ('type: "Scale" scale_param { bias_term: true filler { type: "uniform" min: -2 max: 2 } }', None),
        ('type: "Scale" scale_param { axis: 0 }', (2, 3)),
        ('type: "Bias" bias_param { filler { type: "uniform" min: -2 max: 2 } }', None),
        ('type: "Bias" bias_param { axis: 2 }', (4, 2)),
    ],
)
def test_in_place_matches_separate_top(xp, text, extra_bottom):
    separate, shared = make_layer(text, xp), make_layer(text, xp)
    x = random_blob(SHAPE, xp)
    alias = random_blob(SHAPE, xp)
    others = [] if extra_bottom is None else [random_blob(extra_bottom, xp, seed=8)]
    top = setup_forward(separate, [x, *others])
    shared.setup([alias, *others], [alias])
    for a, b in zip(separate.blobs, shared.blobs):
        b.data[...] = a.data
    shared.forward([alias, *others], [alias])
    np.testing.assert_array_equal(host(alias.data), host(top[0].data))
    dy = random_blob(SHAPE, xp, seed=6).data
    top[0].diff[...] = dy
    alias.diff[...] = dy
    down = [True] * (1 + len(others))
    separate.backward(top, down, [x, *others])
    extra_diff = [host(o.diff).copy() for o in others]
    shared.backward([alias], down, [alias, *others])
    np.testing.assert_allclose(host(alias.diff), host(x.diff), rtol=1e-12)
    for a, b in zip(separate.blobs, shared.blobs):
        np.testing.assert_allclose(host(b.diff), host(a.diff), rtol=1e-12)
    for want, other in zip(extra_diff, others):
        np.testing.assert_allclose(host(other.diff), want, rtol=1e-12)


# --- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, shapes, message",
    [
        ('type: "Scale"', [SHAPE, (4,)], "does not match"),
        ('type: "Bias" bias_param { axis: 2 }', [SHAPE, (4, 3)], "does not match"),
        ('type: "Scale" scale_param { axis: 3 }', [SHAPE, (2, 2)], "does not match"),
        ('type: "Scale" scale_param { num_axes: -2 }', [SHAPE], "num_axes"),
        ('type: "Bias" bias_param { axis: 2 num_axes: 3 }', [SHAPE], "extends past"),
        ('type: "Scale" scale_param { axis: 4 }', [SHAPE], "axis 4 out of range"),
    ],
)
def test_bad_geometry_is_refused(xp, text, shapes, message):
    layer = make_layer('name: "op" ' + text, xp)
    with pytest.raises(LayerSetupError, match=message) as info:
        layer.setup([random_blob(s, xp) for s in shapes], blobs(1, xp))
    assert "'op'" in str(info.value)


# --- MVN -------------------------------------------------------------------------------------------


def mvn_reference(x: np.ndarray, across_channels: bool, normalize_variance: bool, eps: float) -> np.ndarray:
    y = np.empty_like(x)
    for n in range(x.shape[0]):
        groups = [(n,)] if across_channels else [(n, c) for c in range(x.shape[1])]
        for g in groups:
            values = x[g]
            centered = values - values.mean()
            y[g] = centered / (np.sqrt((centered**2).mean()) + eps) if normalize_variance else centered
    return y


MVN_CASES = {
    "default": ("", False, True),
    "across_channels": ("across_channels: true", True, True),
    "mean_only": ("normalize_variance: false", False, False),
    "mean_only_across": ("normalize_variance: false across_channels: true", True, False),
}


@pytest.mark.parametrize("name", list(MVN_CASES))
def test_mvn_forward(xp, name):
    text, across, normalize = MVN_CASES[name]
    layer = make_layer(f'type: "MVN" mvn_param {{ {text} eps: 0.001 }}', xp)
    bottom = [random_blob(SHAPE, xp, low=-2, high=5)]
    top = setup_forward(layer, bottom)
    want = mvn_reference(host(bottom[0].data), across, normalize, float(np.float32(0.001)))
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(MVN_CASES))
def test_mvn_gradient(xp, name):
    text, _, _ = MVN_CASES[name]
    layer = make_layer(
        f'type: "MVN" mvn_param {{ {text} }}', xp
    )  # default eps 1e-9: Caffe's gradient is exact
    GradientChecker(stepsize=1e-3).check(layer, [random_blob(SHAPE, xp)], blobs(1, xp))


def test_mvn_in_place_matches_separate_top(xp):
    separate, shared = make_layer('type: "MVN"', xp), make_layer('type: "MVN"', xp)
    x, alias = random_blob(SHAPE, xp), random_blob(SHAPE, xp)
    top = setup_forward(separate, [x])
    shared.setup([alias], [alias])
    shared.forward([alias], [alias])
    np.testing.assert_allclose(host(alias.data), host(top[0].data), rtol=1e-12)
    dy = random_blob(SHAPE, xp, seed=3).data
    top[0].diff[...] = dy
    alias.diff[...] = dy
    separate.backward(top, [True], [x])
    shared.backward([alias], [True], [alias])
    np.testing.assert_allclose(host(alias.diff), host(x.diff), rtol=1e-12)


def test_mvn_on_two_axes_normalizes_each_row_across_channels(xp):
    layer = make_layer('type: "MVN" mvn_param { across_channels: true }', xp)
    bottom = [random_blob((3, 5), xp)]
    top = setup_forward(layer, bottom)
    y = host(top[0].data)
    np.testing.assert_allclose(y.mean(axis=1), 0, atol=1e-12)
    np.testing.assert_allclose(y.std(axis=1), 1, rtol=1e-6)


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("spec", ["bias_term: true", "axis: 1 num_axes: 2 bias_term: true", ""])
def test_scale_split_over_threads_matches_plain_numpy(monkeypatch, in_place, spec):
    """Ranges of the operand's values on three threads (each its own slice) give the plain formulas."""
    from engine import parallel

    monkeypatch.setattr(parallel, "_pool", parallel.Pool(3))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    monkeypatch.setattr(parallel, "MIN_SLICE", 1)
    layer = make_layer(f"type: 'Scale' scale_param {{ {spec} }}", np)
    bottom = random_blob((3, 5, 4, 2), np, dtype=np.float32)
    x = bottom.data.astype(np.float64)
    top = [bottom] if in_place else blobs(1, np, np.float32)
    layer.setup([bottom], top)
    rng = np.random.default_rng(5)
    for blob in layer.blobs:
        blob.data[...] = rng.standard_normal(blob.shape)
        blob.diff[...] = rng.standard_normal(blob.shape)  # gradients add to what is there
    before = [blob.diff.astype(np.float64) for blob in layer.blobs]
    shape = (3, -1, 2) if "num_axes: 2" in spec else (3, -1, 8)
    s = layer.blobs[0].data.astype(np.float64).reshape(1, -1, 1)
    b = layer.blobs[1].data.astype(np.float64).reshape(1, -1, 1) if "bias" in spec else 0
    layer.forward([bottom], top)
    # float32 work against a float64 reference: a few ulps of values of order 1.
    np.testing.assert_allclose(top[0].data.reshape(shape), x.reshape(shape) * s + b, rtol=1e-5, atol=1e-6)
    dy = rng.standard_normal(x.shape)
    top[0].diff[...] = dy
    layer.backward(top, [True], [bottom])
    dy3, x3 = dy.astype(np.float32).astype(np.float64).reshape(shape), x.reshape(shape)
    np.testing.assert_allclose(bottom.diff.reshape(shape), dy3 * s, rtol=1e-5, atol=1e-6)
    want_s = before[0].reshape(-1) + (dy3 * x3).sum(axis=(0, 2))
    np.testing.assert_allclose(layer.blobs[0].diff.reshape(-1), want_s, rtol=1e-4, atol=1e-5)
    if "bias" in spec:
        want_b = before[1].reshape(-1) + dy3.sum(axis=(0, 2))
        np.testing.assert_allclose(layer.blobs[1].diff.reshape(-1), want_b, rtol=1e-4, atol=1e-5)
