"""BatchNorm: batch and global statistics, the running sums, lr_mult 0, gradients and the Caffe golden."""

from __future__ import annotations

import numpy as np
import pytest
from tests_support import close

from engine.errors import LayerSetupError
from engine.layers import create_layer
from engine.testing import GradientChecker, blobs, host, layer_param, make_layer, random_blob
from proto import caffe_pb2

SHAPE = (3, 4, 2, 3)
TRAIN, TEST = caffe_pb2.TRAIN, caffe_pb2.TEST


def f32(value: float) -> float:
    return float(np.float32(value))


def reference(x: np.ndarray, mean: np.ndarray, var: np.ndarray, eps: float) -> np.ndarray:
    """Normalize channel by channel, element by element."""
    y = np.empty_like(x)
    for index in np.ndindex(x.shape):
        c = index[1] if x.ndim > 1 else 0
        y[index] = (x[index] - mean[c]) / np.sqrt(var[c] + eps)
    return y


def batch_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    channels = [np.moveaxis(x, 1, 0)[c].ravel() for c in range(x.shape[1])]
    return np.array([v.mean() for v in channels]), np.array([((v - v.mean()) ** 2).mean() for v in channels])


def run(layer, bottom, top=None):
    top = blobs(1, bottom.xp, bottom.dtype) if top is None else top
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    return top[0]


def test_train_forward_normalizes_with_batch_statistics(xp):
    layer = make_layer('type: "BatchNorm"', xp)
    bottom = random_blob(SHAPE, xp, low=-3, high=5)
    x = host(bottom.data).copy()
    top = run(layer, bottom)
    mean, var = batch_stats(x)
    np.testing.assert_allclose(host(top.data), reference(x, mean, var, f32(1e-5)), rtol=1e-10)
    # What Caffe's own test checks: every channel comes out with mean 0 and variance ~1.
    y = np.moveaxis(host(top.data), 1, 0).reshape(SHAPE[1], -1)
    np.testing.assert_allclose(y.mean(axis=1), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=1), var / (var + f32(1e-5)), rtol=1e-10)


def test_blobs_are_three_zeroed_statistics_with_lr_mult_zero(xp):
    layer = make_layer('type: "BatchNorm"', xp)
    layer.setup([random_blob(SHAPE, xp)], blobs(1, xp))
    assert [b.shape for b in layer.blobs] == [(4,), (4,), (1,)]
    assert all(not host(b.data).any() for b in layer.blobs)
    assert [spec.lr_mult for spec in layer.param.param] == [0, 0, 0]


def test_given_lr_mult_zero_is_kept_and_missing_ones_are_added(xp):
    layer = make_layer('type: "BatchNorm" param { lr_mult: 0 decay_mult: 0 }', xp)
    layer.setup([random_blob(SHAPE, xp)], blobs(1, xp))
    assert [spec.lr_mult for spec in layer.param.param] == [0, 0, 0]
    assert layer.param.param[0].decay_mult == 0


@pytest.mark.parametrize("spec", ["param { lr_mult: 1 }", "param { lr_mult: 0 } param { }"])
def test_learning_the_statistics_is_refused(xp, spec):
    layer = make_layer(f'name: "bn" type: "BatchNorm" {spec}', xp)
    with pytest.raises(LayerSetupError, match="'bn'.*lr_mult"):
        layer.setup([random_blob(SHAPE, xp)], blobs(1, xp))


def test_train_forward_updates_running_sums_as_caffe(xp):
    layer = make_layer('type: "BatchNorm" batch_norm_param { moving_average_fraction: 0.9 }', xp)
    first, second = random_blob(SHAPE, xp, seed=1), random_blob(SHAPE, xp, low=2, high=4, seed=2)
    top = [run(layer, first)]
    layer.forward([second], top)
    maf, m = f32(0.9), SHAPE[0] * SHAPE[2] * SHAPE[3]
    (mean1, var1), (mean2, var2) = batch_stats(host(first.data)), batch_stats(host(second.data))
    factor = (0 * maf + 1) * maf + 1  # from 0, one update per forward
    mean_sum = maf * mean1 + mean2
    var_sum = maf * (m / (m - 1)) * var1 + (m / (m - 1)) * var2
    np.testing.assert_allclose(host(layer.blobs[2].data), [factor], rtol=1e-12)
    np.testing.assert_allclose(host(layer.blobs[0].data), mean_sum, rtol=1e-10)
    np.testing.assert_allclose(host(layer.blobs[1].data), var_sum, rtol=1e-10)


@pytest.mark.parametrize("shape", [(5, 3), (6,)])
def test_bias_correction_counts_every_value_of_a_channel(xp, shape):
    layer = make_layer('type: "BatchNorm"', xp)
    bottom = random_blob(shape, xp)
    run(layer, bottom)
    x = host(bottom.data).reshape(shape[0], -1)
    m = shape[0]
    np.testing.assert_allclose(host(layer.blobs[1].data), x.var(axis=0) * m / (m - 1), rtol=1e-10)
    assert layer.blobs[0].shape == (x.shape[1],)


def test_test_phase_uses_stored_statistics_and_leaves_them(xp):
    layer = make_layer('type: "BatchNorm" batch_norm_param { eps: 0.01 }', xp, phase=TEST)
    bottom = random_blob(SHAPE, xp)
    layer.setup([bottom], blobs(1, xp))
    mean_sum, var_sum, factor = np.array([0.5, -1.0, 2.0, 0.0]), np.array([1.0, 2.0, 0.5, 4.0]), 2.5
    for blob, value in zip(layer.blobs, (mean_sum, var_sum, [factor])):
        blob.data[...] = xp.asarray(value)
    top = blobs(1, xp)
    layer.reshape([bottom], top)
    layer.forward([bottom], top)
    want = reference(host(bottom.data), mean_sum / factor, var_sum / factor, f32(0.01))
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-10)
    np.testing.assert_array_equal(host(layer.blobs[0].data), mean_sum)
    np.testing.assert_array_equal(host(layer.blobs[2].data), [factor])


def test_zero_scale_factor_means_zero_statistics(xp):
    layer = make_layer('type: "BatchNorm" batch_norm_param { use_global_stats: true }', xp)
    bottom = random_blob(SHAPE, xp)
    layer.setup([bottom], blobs(1, xp))
    layer.blobs[0].data[...] = 3.0  # ignored: the factor is 0
    top = blobs(1, xp)
    layer.reshape([bottom], top)
    layer.forward([bottom], top)
    np.testing.assert_allclose(host(top[0].data), host(bottom.data) / np.sqrt(f32(1e-5)), rtol=1e-10)


def test_use_global_stats_false_in_test_phase_uses_the_batch(xp):
    layer = make_layer('type: "BatchNorm" batch_norm_param { use_global_stats: false }', xp, phase=TEST)
    bottom = random_blob(SHAPE, xp)
    top = run(layer, bottom)
    mean, var = batch_stats(host(bottom.data))
    np.testing.assert_allclose(host(top.data), reference(host(bottom.data), mean, var, f32(1e-5)), rtol=1e-10)
    np.testing.assert_allclose(host(layer.blobs[2].data), [1.0])


@pytest.mark.parametrize("shape", [SHAPE, (4, 3)])
def test_gradient_with_batch_statistics(xp, shape):
    layer = make_layer('type: "BatchNorm"', xp)
    GradientChecker(stepsize=1e-3).check(layer, [random_blob(shape, xp)], blobs(1, xp), check_params=False)


def test_gradient_with_global_statistics(xp):
    layer = make_layer('type: "BatchNorm" batch_norm_param { use_global_stats: true }', xp)
    bottom = random_blob(SHAPE, xp)
    layer.setup([bottom], blobs(1, xp))
    for blob, value in zip(layer.blobs, ([0.5, -1.0, 2.0, 0.0], [1.0, 2.0, 0.5, 4.0], [2.0])):
        blob.data[...] = xp.asarray(value)
    GradientChecker(stepsize=1e-3).check(layer, [bottom], blobs(1, xp), check_params=False)


@pytest.mark.parametrize("phase", [TRAIN, TEST])
def test_in_place_matches_separate_top_even_if_the_top_is_overwritten(xp, phase):
    separate, shared = (make_layer('type: "BatchNorm"', xp, phase=phase) for _ in range(2))
    bottom, top, alias = random_blob(SHAPE, xp), blobs(1, xp), random_blob(SHAPE, xp)
    separate.setup([bottom], top)
    shared.setup([alias], [alias])
    for a, b in zip(separate.blobs, shared.blobs):
        a.data[...] = b.data[...] = xp.asarray(np.arange(1.0, 1.0 + a.count()))
    separate.forward([bottom], top)
    shared.forward([alias], [alias])
    np.testing.assert_allclose(host(alias.data), host(top[0].data), rtol=1e-12)
    alias.data[...] = 7.0  # a later in-place layer (a Scale, say) overwrites the top
    dy = random_blob(SHAPE, xp, seed=4).data
    top[0].diff[...] = dy
    alias.diff[...] = dy
    separate.backward(top, [True], [bottom])
    shared.backward([alias], [True], [alias])
    np.testing.assert_allclose(host(alias.diff), host(bottom.diff), rtol=1e-12)
    assert np.abs(host(bottom.diff)).max() > 0


def test_changed_channel_count_is_refused(xp):
    layer = make_layer('name: "bn" type: "BatchNorm"', xp)
    top = blobs(1, xp)
    layer.setup([random_blob(SHAPE, xp)], top)
    with pytest.raises(LayerSetupError, match="'bn'.*4 channels"):
        layer.reshape([random_blob((3, 5, 2), xp)], top)


def test_batch_norm_and_scale_match_caffe_golden(goldens, xp):
    """The golden net without its Input and loss: BatchNorm then Scale with bias, TRAIN, float32."""
    folder = goldens / "layers" / "batch_norm"
    io = np.load(folder / "io.npz")
    weights = caffe_pb2.NetParameter()
    weights.ParseFromString((folder / "weights.caffemodel").read_bytes())
    stored = {layer.name: layer.blobs for layer in weights.layer}

    def build(text: str):
        param = layer_param(text, TRAIN)
        param.blobs.extend(stored[param.name])
        return create_layer(param, xp=xp, dtype=np.float32)

    bn = build('name: "bn" type: "BatchNorm"')
    scale = build('name: "scale" type: "Scale" scale_param { bias_term: true }')
    x, target = io["data/data"], io["data/target"]
    data, normed, scaled = random_blob(x.shape, xp, np.float32), *blobs(2, xp, np.float32)
    data.data[...] = xp.asarray(x)
    bn.setup([data], [normed])
    scale.setup([normed], [scaled])
    bn.forward([data], [normed])
    scale.forward([normed], [scaled])
    assert close(host(normed.data), io["data/bn"], 1e-4)
    assert close(host(scaled.data), io["data/scaled"], 1e-4)
    for i in range(3):
        assert close(host(bn.blobs[i].data), io[f"param/bn/{i}"], 1e-4), f"bn blob {i}"

    scaled.diff[...] = xp.asarray((io["data/scaled"] - target) / x.shape[0])
    for blob in scale.blobs:
        blob.diff[...] = 0
    scale.backward([scaled], [True], [normed])
    bn.backward([normed], [True], [data])
    assert close(host(data.diff), io["diff/data"], 1e-4)
    for i in range(2):
        assert close(host(scale.blobs[i].diff), io[f"pdiff/scale/{i}"], 1e-4), f"scale diff {i}"


@pytest.mark.parametrize("phase", [TRAIN, TEST])
@pytest.mark.parametrize("in_place", [False, True])
def test_channels_split_over_threads_match_plain_numpy(monkeypatch, phase, in_place):
    """Ranges of channels on three threads (every channel its own slice) give the plain formulas."""
    from engine import parallel

    monkeypatch.setattr(parallel, "_pool", parallel.Pool(3))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    monkeypatch.setattr(parallel, "MIN_SLICE", 1)
    layer = make_layer("type: 'BatchNorm'", np, phase=phase)
    bottom = random_blob((4, 7, 5, 3), np, low=-2, high=3, dtype=np.float32)
    x = bottom.data.astype(np.float64)
    top = [bottom] if in_place else blobs(1, np, np.float32)
    layer.setup([bottom], top)
    if phase == TEST:
        for blob, value in zip(layer.blobs, (np.linspace(-1, 1, 7), np.linspace(0.5, 2, 7), [2.0])):
            blob.data[...] = value
        mean, var = layer.blobs[0].data / 2.0, layer.blobs[1].data / 2.0
    else:
        mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    layer.forward([bottom], top)
    std = np.sqrt(var + f32(1e-5)).reshape(1, -1, 1, 1)
    y = (x - mean.reshape(1, -1, 1, 1)) / std
    # float32 work against a float64 reference: a few ulps of values of order 1-10.
    np.testing.assert_allclose(top[0].data, y, rtol=1e-5, atol=1e-5)
    dy = np.random.default_rng(3).standard_normal(y.shape)
    top[0].diff[...] = dy
    layer.backward(top, [True], [bottom])
    if phase == TEST:
        dx = dy / std
    else:
        means = dy.mean(axis=(0, 2, 3), keepdims=True), (dy * y).mean(axis=(0, 2, 3), keepdims=True)
        dx = (dy - means[0] - y * means[1]) / std
    np.testing.assert_allclose(bottom.diff, dx, rtol=1e-4, atol=1e-5)
