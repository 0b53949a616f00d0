"""SoftmaxWithLoss against a loop-by-loop reference, Caffe's goldens and numerical gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests_support import close

from engine.blob import Blob
from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer

FLT_MIN = float(np.finfo(np.float32).tiny)
MODES = ["FULL", "VALID", "BATCH_SIZE", "NONE"]


def blob_of(xp, values, dtype=np.float64) -> Blob:
    values = np.asarray(values, dtype)
    blob = Blob(values.shape, dtype, xp)
    blob.data[...] = xp.asarray(values)
    return blob


def scores_and_labels(shape, axis, seed=3, ignore=None):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=shape) * 2
    label_shape = shape[:axis] + shape[axis + 1 :]
    labels = rng.integers(0, shape[axis], size=label_shape).astype(np.float64)
    if ignore is not None:
        labels.flat[::3] = ignore
    return scores, labels


def reference(scores, labels, axis, ignore=None, mode="VALID"):
    """Loss, d loss / d scores and probabilities, one position at a time."""
    x = np.moveaxis(np.asarray(scores, np.float64), axis, -1)
    flat_x = x.reshape(-1, x.shape[-1])
    flat_labels = np.asarray(labels).reshape(-1)
    prob = np.zeros_like(flat_x)
    grad = np.zeros_like(flat_x)
    loss, count = 0.0, 0
    for n, row in enumerate(flat_x):
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        prob[n] = [e / sum(exps) for e in exps]
        label = int(flat_labels[n])
        if ignore is not None and label == ignore:
            continue
        loss -= math.log(max(prob[n][label], FLT_MIN))
        grad[n] = prob[n]
        grad[n][label] -= 1
        count += 1
    outer = int(np.prod(np.asarray(scores).shape[:axis]))
    normalizer = {"FULL": flat_x.shape[0], "VALID": count, "BATCH_SIZE": outer, "NONE": 1}[mode]
    normalizer = max(1, normalizer)
    back = lambda a: np.moveaxis(a.reshape(x.shape), -1, axis)  # noqa: E731
    return loss / normalizer, back(grad) / normalizer, back(prob)


def layer_text(axis=1, ignore=None, mode=None, normalize=None, extra=""):
    loss = []
    if ignore is not None:
        loss.append(f"ignore_label: {ignore}")
    if mode is not None:
        loss.append(f"normalization: {mode}")
    if normalize is not None:
        loss.append(f"normalize: {str(normalize).lower()}")
    return (
        f'name: "loss" type: "SoftmaxWithLoss" softmax_param {{ axis: {axis} }} '
        f"loss_param {{ {' '.join(loss)} }} {extra}"
    )


def run(xp, text, scores, labels, ntop=1, dtype=np.float64):
    layer = make_layer(text, xp=xp, dtype=dtype)
    bottom = [blob_of(xp, scores, dtype), blob_of(xp, labels, dtype)]
    top = blobs(ntop, xp, dtype)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    layer.backward(top, [True, False], bottom)
    return layer, bottom, top


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ignore", [None, 2])
def test_forward_and_backward_match_reference(xp, mode, ignore):
    scores, labels = scores_and_labels((3, 4, 2, 3), axis=1, ignore=ignore)
    _, bottom, top = run(xp, layer_text(ignore=ignore, mode=mode), scores, labels)
    loss, grad, _ = reference(scores, labels, 1, ignore, mode)
    assert host(top[0].data).shape == ()
    np.testing.assert_allclose(host(top[0].data), loss, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[0].diff), grad, rtol=1e-10, atol=1e-14)
    if ignore is not None:
        ignored = np.moveaxis(host(bottom[0].diff), 1, -1)[labels == ignore]
        assert ignored.size and not ignored.any()


@pytest.mark.parametrize(("shape", "axis"), [((4, 5), 1), ((2, 3, 4), 2), ((2, 3, 4), -1), ((2, 3, 2, 4), 3)])
def test_softmax_axis(xp, shape, axis):
    canonical = axis % len(shape)
    scores, labels = scores_and_labels(shape, canonical, seed=7)
    _, bottom, top = run(xp, layer_text(axis=axis), scores, labels)
    loss, grad, _ = reference(scores, labels, canonical)
    np.testing.assert_allclose(host(top[0].data), loss, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[0].diff), grad, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize(
    ("normalize", "mode", "expected"),
    [(False, None, "BATCH_SIZE"), (True, None, "VALID"), (False, "FULL", "FULL"), (True, "NONE", "NONE")],
)
def test_legacy_normalize_applies_only_without_normalization(xp, normalize, mode, expected):
    scores, labels = scores_and_labels((4, 3, 2), axis=1, ignore=1)
    _, _, top = run(xp, layer_text(ignore=1, mode=mode, normalize=normalize), scores, labels)
    loss, _, _ = reference(scores, labels, 1, 1, expected)
    np.testing.assert_allclose(host(top[0].data), loss, rtol=1e-12)


def test_each_ignored_label_drops_its_share(xp):
    # Caffe's TestForwardIgnoreLabel: unnormalized, ignoring each class in turn counts every
    # position in all runs but one, so the losses add up to (C - 1) times the full loss.
    scores, labels = scores_and_labels((6, 5, 2), axis=1, seed=11)
    _, _, top = run(xp, layer_text(mode="BATCH_SIZE"), scores, labels)
    full = float(host(top[0].data))
    total = sum(
        float(host(run(xp, layer_text(ignore=c, mode="BATCH_SIZE"), scores, labels)[2][0].data))
        for c in range(5)
    )
    np.testing.assert_allclose(total, 4 * full, rtol=1e-12)


def test_all_ignored_gives_zero_not_nan(xp):
    scores, _ = scores_and_labels((3, 4), axis=1)
    labels = np.full(3, 255.0)
    _, bottom, top = run(xp, layer_text(ignore=255), scores, labels)
    assert float(host(top[0].data)) == 0.0
    assert not host(bottom[0].diff).any()


def test_probability_top_and_loss_weight(xp):
    scores, labels = scores_and_labels((3, 4, 2), axis=1)
    text = layer_text(extra="loss_weight: 2.5 loss_weight: 0")
    layer, bottom, top = run(xp, text, scores, labels, ntop=2)
    loss, grad, prob = reference(scores, labels, 1)
    assert layer.loss(0) == 2.5 and layer.loss(1) == 0.0
    np.testing.assert_allclose(host(top[1].data), prob, rtol=1e-12)
    np.testing.assert_allclose(host(top[0].data), loss, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[0].diff), 2.5 * grad, rtol=1e-10, atol=1e-14)


def test_two_tops_need_a_loss_weight_each(xp):
    scores, labels = scores_and_labels((3, 4), axis=1)
    with pytest.raises(LayerSetupError, match="loss_weight"):
        run(xp, layer_text(), scores, labels, ntop=2)


def test_log_is_clamped_at_flt_min_and_large_scores_are_stable(xp):
    scores = np.array([[0.0, -200.0, 1000.0], [1000.0, 999.0, -1000.0]])
    labels = np.array([1.0, 1.0])
    _, bottom, top = run(xp, layer_text(), scores, labels)
    expected = (-math.log(FLT_MIN) + 1 + math.log1p(math.exp(-1))) / 2
    np.testing.assert_allclose(host(top[0].data), expected, rtol=1e-12)
    assert np.isfinite(host(bottom[0].diff)).all()


@pytest.mark.parametrize("mode", MODES)
def test_gradient(xp, mode):
    scores, labels = scores_and_labels((2, 3, 2, 2), axis=1, seed=5, ignore=0)
    layer = make_layer(layer_text(ignore=0, mode=mode), xp=xp)
    bottom = [blob_of(xp, scores), blob_of(xp, labels)]
    GradientChecker(1e-2, 1e-3).check(layer, bottom, blobs(1, xp), check_bottom=[0])


def test_gradient_other_axis(xp):
    scores, labels = scores_and_labels((2, 3, 4), axis=2, seed=9)
    layer = make_layer(layer_text(axis=-1, normalize=False), xp=xp)
    bottom = [blob_of(xp, scores), blob_of(xp, labels)]
    GradientChecker(1e-2, 1e-3).check(layer, bottom, blobs(1, xp), check_bottom=[0])


@pytest.mark.parametrize(
    ("labels", "message"),
    [([0.0, 5.0], r"\[0, 5\).*5\.0"), ([-1.0, 0.0], r"-1\.0"), ([np.nan, 0.0], "nan")],
)
def test_bad_labels_raise(xp, labels, message):
    scores, _ = scores_and_labels((2, 5), axis=1)
    with pytest.raises(LayerSetupError, match=f"'loss' \\(SoftmaxWithLoss\\).*{message}"):
        run(xp, layer_text(), scores, labels)


def test_ignored_label_may_lie_outside_the_classes(xp):
    scores, _ = scores_and_labels((2, 5), axis=1)
    _, _, top = run(xp, layer_text(ignore=-1), scores, [-1.0, 3.0])
    np.testing.assert_allclose(host(top[0].data), reference(scores, [-1, 3], 1, -1)[0], rtol=1e-12)


@pytest.mark.parametrize(
    ("score_shape", "label_shape", "message"),
    [((2, 5, 3), (2, 2), "number of labels"), ((2, 5), (3,), "same first dimension")],
)
def test_shape_mismatch_raises(xp, score_shape, label_shape, message):
    layer = make_layer(layer_text(), xp=xp)
    bottom = [Blob(score_shape, np.float64, xp), Blob(label_shape, np.float64, xp)]
    with pytest.raises(LayerSetupError, match=message):
        layer.setup(bottom, blobs(1, xp))


def test_class_axis_out_of_range_is_a_layer_error(xp):
    layer = make_layer(layer_text(axis=3), xp=xp)
    bottom = [Blob((2, 5, 3), np.float64, xp), Blob((2, 3), np.float64, xp)]
    with pytest.raises(LayerSetupError, match=r"'loss' \(SoftmaxWithLoss\).*axis 3 out of range"):
        layer.setup(bottom, blobs(1, xp))


def test_labels_get_no_gradient(xp):
    scores, labels = scores_and_labels((2, 5), axis=1)
    layer, bottom, top = run(xp, layer_text(), scores, labels)
    assert not layer.allow_force_backward(1) and layer.allow_force_backward(0)
    with pytest.raises(LayerSetupError, match="label"):
        layer.backward(top, [True, True], bottom)


def test_matches_caffe_golden(xp, goldens):
    io = np.load(goldens / "layers" / "softmax_with_loss" / "io.npz")
    _, bottom, top = run(xp, layer_text(), io["data/score"], io["data/label"], dtype=np.float32)
    assert top[0].data.dtype == np.float32
    assert close(host(top[0].data), io["data/loss"], 1e-4)
    assert close(host(bottom[0].diff), io["diff/score"], 1e-4)


def test_fractional_labels_truncate_as_caffe_casts_them(xp):
    scores, _ = scores_and_labels((3, 5), axis=1)
    _, _, top = run(xp, layer_text(), scores, [2.7, 0.2, 4.99])
    np.testing.assert_allclose(host(top[0].data), reference(scores, [2, 0, 4], 1, None)[0], rtol=1e-12)
