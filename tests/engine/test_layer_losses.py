"""EuclideanLoss, SigmoidCrossEntropyLoss, HingeLoss, MultinomialLogisticLoss, InfogainLoss and
ContrastiveLoss: each against a loop-by-loop reference and numerical gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests_support import close

from engine.blob import Blob
from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer
from proto import caffe_pb2

FLT_MIN = float(np.finfo(np.float32).tiny)


def blob_of(xp, values, dtype=np.float64) -> Blob:
    values = np.asarray(values, dtype)
    blob = Blob(values.shape, dtype, xp)
    blob.data[...] = xp.asarray(values)
    return blob


def run(xp, text, arrays, propagate_down=None, dtype=np.float64, ntop=1):
    """Set up, forward and backward (top diff = the loss weight) one layer; return it and its blobs."""
    layer = make_layer(text, xp=xp, dtype=dtype)
    bottom = [blob_of(xp, a, dtype) for a in arrays]
    top = blobs(ntop, xp, dtype)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    down = propagate_down or [True] + [False] * (len(bottom) - 1)
    layer.backward(top, down, bottom)
    return layer, bottom, top


def loss_of(top) -> float:
    return float(host(top[0].data))


def check_gradient(xp, text, arrays, check_bottom=(0,), **checker):
    layer = make_layer(text, xp=xp)
    bottom = [blob_of(xp, a) for a in arrays]
    GradientChecker(**{"stepsize": 1e-2, "threshold": 1e-3, **checker}).check(
        layer, bottom, blobs(1, xp), check_bottom=list(check_bottom)
    )


def class_labels(rng, n, classes, ignore=None):
    labels = rng.integers(0, classes, size=n).astype(np.float64)
    if ignore is not None:
        labels[::3] = ignore
    return labels


# --- EuclideanLoss ---------------------------------------------------------------------------------


def euclidean_reference(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64).reshape(np.shape(a))
    n = a.shape[0]
    loss = sum((x - y) ** 2 for x, y in zip(a.ravel(), b.ravel())) / (2 * n)
    return loss, (a - b) / n


def test_euclidean_forward_backward(xp):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 2, 4)), rng.normal(size=(3, 8))  # same count per sample suffices
    _, bottom, top = run(xp, 'name: "l" type: "EuclideanLoss" loss_weight: 2', [a, b], [True, True])
    loss, grad = euclidean_reference(a, b)
    np.testing.assert_allclose(loss_of(top), loss, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[0].diff), 2 * grad, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[1].diff), -2 * grad.reshape(3, 8), rtol=1e-12)


def test_euclidean_gradient_both_bottoms(xp):
    rng = np.random.default_rng(1)
    arrays = [rng.normal(size=(3, 2, 2)), rng.normal(size=(3, 2, 2))]
    check_gradient(xp, 'name: "l" type: "EuclideanLoss"', arrays, check_bottom=(0, 1))
    assert make_layer('name: "l" type: "EuclideanLoss"').allow_force_backward(1)


@pytest.mark.parametrize(
    ("a", "b", "message"), [((3, 4), (3, 5), "same dimension"), ((3, 4), (2, 6), "first")]
)
def test_euclidean_shape_mismatch(xp, a, b, message):
    layer = make_layer('name: "l" type: "EuclideanLoss"', xp=xp)
    with pytest.raises(LayerSetupError, match=message):
        layer.setup([Blob(a, np.float64, xp), Blob(b, np.float64, xp)], blobs(1, xp))


def test_euclidean_matches_caffe_golden(xp, goldens):
    io = np.load(goldens / "layers" / "euclidean_loss" / "io.npz")
    _, bottom, top = run(
        xp, 'name: "l" type: "EuclideanLoss"', [io["data/a"], io["data/b"]], [True, True], dtype=np.float32
    )
    assert close(host(top[0].data), io["data/loss"], 1e-4)
    assert close(host(bottom[0].diff), io["diff/a"], 1e-4)
    assert close(host(bottom[1].diff), io["diff/b"], 1e-4)


# --- SigmoidCrossEntropyLoss -----------------------------------------------------------------------


def sigmoid_ce_reference(x, t, ignore=None, mode="BATCH_SIZE"):
    """The textbook -t log(s) - (1 - t) log(1 - s), one element at a time."""
    x, t = np.asarray(x, np.float64), np.asarray(t, np.float64)
    loss, count, grad = 0.0, 0, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        if ignore is not None and int(t[i]) == ignore:
            continue
        s = 1 / (1 + math.exp(-x[i]))
        loss -= t[i] * math.log(s) + (1 - t[i]) * math.log(1 - s)
        grad[i] = s - t[i]
        count += 1
    normalizer = max(1, {"FULL": x.size, "VALID": count, "BATCH_SIZE": x.shape[0], "NONE": 1}[mode])
    return loss / normalizer, grad / normalizer


def sigmoid_text(ignore=None, mode=None, normalize=None):
    fields = [
        f"ignore_label: {ignore}" if ignore is not None else "",
        f"normalization: {mode}" if mode else "",
    ]
    if normalize is not None:
        fields.append(f"normalize: {str(normalize).lower()}")
    return f'name: "l" type: "SigmoidCrossEntropyLoss" loss_param {{ {" ".join(fields)} }}'


def sigmoid_case(seed=2, ignore=None):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(4, 3, 2)) * 3
    t = rng.uniform(size=(4, 3, 2))  # targets are probabilities, not only 0 and 1
    if ignore is not None:
        t.flat[::5] = ignore
    return x, t


@pytest.mark.parametrize(
    ("mode", "normalize", "expected"),
    [
        (None, None, "BATCH_SIZE"),  # unlike SoftmaxWithLoss, unset means BATCH_SIZE
        ("FULL", None, "FULL"),
        ("VALID", None, "VALID"),
        ("BATCH_SIZE", None, "BATCH_SIZE"),
        ("NONE", None, "NONE"),
        (None, True, "VALID"),
        (None, False, "BATCH_SIZE"),
        ("NONE", True, "NONE"),
    ],
)
def test_sigmoid_ce_normalization(xp, mode, normalize, expected):
    x, t = sigmoid_case(ignore=-1)
    _, bottom, top = run(xp, sigmoid_text(-1, mode, normalize), [x, t])
    loss, grad = sigmoid_ce_reference(x, t, -1, expected)
    np.testing.assert_allclose(loss_of(top), loss, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[0].diff), grad, rtol=1e-10, atol=1e-15)
    assert not host(bottom[0].diff)[t == -1].any()


def test_sigmoid_ce_is_stable_for_large_scores(xp):
    x = np.array([[200.0, -200.0, 800.0, -800.0]])
    t = np.array([[0.0, 1.0, 1.0, 0.0]])
    _, bottom, top = run(xp, sigmoid_text(), [x, t])
    np.testing.assert_allclose(loss_of(top), 400.0, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[0].diff), [[1.0, -1.0, 0.0, 0.0]], atol=1e-12)


@pytest.mark.parametrize("ignore", [None, -1])
def test_sigmoid_ce_gradient(xp, ignore):
    x, t = sigmoid_case(seed=3, ignore=ignore)
    check_gradient(xp, sigmoid_text(ignore, "VALID"), [x[:2], t[:2]])


def test_sigmoid_ce_count_mismatch(xp):
    layer = make_layer(sigmoid_text(), xp=xp)
    with pytest.raises(LayerSetupError, match="same count"):
        layer.setup([Blob((2, 3), np.float64, xp), Blob((2, 4), np.float64, xp)], blobs(1, xp))
    assert not layer.allow_force_backward(1)


# --- HingeLoss -------------------------------------------------------------------------------------


def hinge_reference(x, labels, norm):
    x = np.asarray(x, np.float64)
    n = x.shape[0]
    flat = x.reshape(n, -1)
    loss, grad = 0.0, np.zeros_like(flat)
    for i in range(n):
        for j in range(flat.shape[1]):
            sign = -1.0 if j == int(labels[i]) else 1.0
            margin = max(0.0, 1 + sign * flat[i, j])
            loss += margin if norm == "L1" else margin**2
            grad[i, j] = sign * ((margin > 0) if norm == "L1" else 2 * margin)
    return loss / n, grad.reshape(x.shape) / n


def hinge_case(seed=4):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, size=(5, 4, 1, 1))
    x[np.abs(np.abs(x) - 1) < 0.1] += 0.3  # keep away from the kinks at +-1
    return x, class_labels(rng, 5, 4)


@pytest.mark.parametrize("norm", ["L1", "L2"])
def test_hinge_forward_backward(xp, norm):
    x, labels = hinge_case()
    text = f'name: "l" type: "HingeLoss" hinge_loss_param {{ norm: {norm} }}'
    _, bottom, top = run(xp, text, [x, labels])
    loss, grad = hinge_reference(x, labels, norm)
    np.testing.assert_allclose(loss_of(top), loss, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[0].diff), grad, rtol=1e-12)


@pytest.mark.parametrize("norm", ["L1", "L2"])
def test_hinge_gradient(xp, norm):
    x, labels = hinge_case(seed=6)
    check_gradient(xp, f'name: "l" type: "HingeLoss" hinge_loss_param {{ norm: {norm} }}', [x, labels])


def test_hinge_bad_labels(xp):
    x, _ = hinge_case()
    with pytest.raises(LayerSetupError, match=r"'l' \(HingeLoss\): labels must lie in \[0, 4\)"):
        run(xp, 'name: "l" type: "HingeLoss"', [x, [0, 1, 2, 3, 4]])
    with pytest.raises(LayerSetupError, match="one label per sample"):
        run(xp, 'name: "l" type: "HingeLoss"', [x, np.zeros((5, 2))])


# --- MultinomialLogisticLoss -----------------------------------------------------------------------


def multinomial_reference(p, labels):
    p = np.asarray(p, np.float64)
    n = p.shape[0]
    flat = p.reshape(n, -1)
    loss, grad = 0.0, np.zeros_like(flat)
    for i in range(n):
        prob = max(flat[i, int(labels[i])], 1e-20)
        loss -= math.log(prob)
        grad[i, int(labels[i])] = -1 / (prob * n)
    return loss / n, grad.reshape(p.shape)


def test_multinomial_forward_backward(xp):
    rng = np.random.default_rng(5)
    p = rng.uniform(0.1, 1, size=(4, 5, 1, 1))
    p[0, 2] = 0.0  # clamped at kLOG_THRESHOLD
    labels = np.array([2.0, 0.0, 4.0, 1.0])
    _, bottom, top = run(xp, 'name: "l" type: "MultinomialLogisticLoss"', [p, labels])
    loss, grad = multinomial_reference(p, labels)
    assert loss > -math.log(1e-20) / 4
    np.testing.assert_allclose(loss_of(top), loss, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[0].diff), grad, rtol=1e-12)


def test_multinomial_gradient(xp):
    rng = np.random.default_rng(6)
    p = rng.uniform(0.3, 1, size=(3, 4))
    check_gradient(xp, 'name: "l" type: "MultinomialLogisticLoss"', [p, class_labels(rng, 3, 4)])


def test_multinomial_errors(xp):
    p = np.full((2, 3), 0.5)
    with pytest.raises(LayerSetupError, match=r"\[0, 3\).*\[3\.0\]"):
        run(xp, 'name: "l" type: "MultinomialLogisticLoss"', [p, [0.0, 3.0]])
    with pytest.raises(LayerSetupError, match="label"):
        run(xp, 'name: "l" type: "MultinomialLogisticLoss"', [p, [0.0, 1.0]], [True, True])


# --- InfogainLoss ----------------------------------------------------------------------------------


def infogain_reference(x, labels, h, axis=1, ignore=None, mode="VALID"):
    """Softmax then -sum_k H[label, k] log p_k, one position at a time."""
    moved = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    loss, count, grad = 0.0, 0, np.zeros_like(rows)
    for n, row in enumerate(rows):
        exps = [math.exp(v - max(row)) for v in row]
        p = [e / sum(exps) for e in exps]
        label = int(np.asarray(labels).reshape(-1)[n])
        if ignore is not None and label == ignore:
            continue
        loss -= sum(h[label][k] * math.log(max(p[k], 1e-20)) for k in range(len(row)))
        grad[n] = [p[k] * sum(h[label]) - h[label][k] for k in range(len(row))]
        count += 1
    outer = int(np.prod(np.shape(x)[:axis]))
    normalizer = max(1, {"FULL": rows.shape[0], "VALID": count, "BATCH_SIZE": outer, "NONE": 1}[mode])
    return loss / normalizer, np.moveaxis(grad.reshape(moved.shape), -1, axis) / normalizer


def infogain_case(shape=(3, 4, 2), axis=1, seed=7, ignore=None):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    labels = rng.integers(0, shape[axis], size=shape[:axis] + shape[axis + 1 :]).astype(np.float64)
    if ignore is not None:
        labels.flat[::3] = ignore
    h = rng.uniform(0, 1, size=(shape[axis], shape[axis]))
    return x, labels, h


def infogain_text(axis=1, ignore=None, mode="VALID", source=None):
    ignore_field = f"ignore_label: {ignore}" if ignore is not None else ""
    source_field = f'source: "{source}"' if source else ""
    return (
        f'name: "l" type: "InfogainLoss" infogain_loss_param {{ axis: {axis} {source_field} }} '
        f"loss_param {{ normalization: {mode} {ignore_field} }}"
    )


def write_matrix(path, h):
    proto = caffe_pb2.BlobProto(num=1, channels=1, height=h.shape[0], width=h.shape[1])
    proto.data.extend(h.astype(np.float32).ravel().tolist())
    path.write_bytes(proto.SerializeToString())
    return path


@pytest.mark.parametrize("mode", ["FULL", "VALID", "BATCH_SIZE", "NONE"])
@pytest.mark.parametrize("ignore", [None, 1])
def test_infogain_with_matrix_bottom(xp, mode, ignore):
    x, labels, h = infogain_case(ignore=ignore)
    _, bottom, top = run(xp, infogain_text(ignore=ignore, mode=mode), [x, labels, h])
    loss, grad = infogain_reference(x, labels, h, 1, ignore, mode)
    np.testing.assert_allclose(loss_of(top), loss, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[0].diff), grad, rtol=1e-10, atol=1e-15)


def test_infogain_from_source_file_other_axis_and_prob_top(xp, tmp_path):
    x, labels, h = infogain_case(shape=(2, 3, 4), axis=2)
    source = write_matrix(tmp_path / "H.binaryproto", h)
    text = infogain_text(axis=-1, source=source) + " loss_weight: 1 loss_weight: 0"
    _, bottom, top = run(xp, text, [x, labels], ntop=2)
    loss, grad = infogain_reference(x, labels, h.astype(np.float32).astype(np.float64), axis=2)
    np.testing.assert_allclose(loss_of(top), loss, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[0].diff), grad, rtol=1e-10, atol=1e-15)
    prob = host(top[1].data)
    np.testing.assert_allclose(prob.sum(axis=2), 1.0, rtol=1e-12)
    np.testing.assert_allclose(prob, np.exp(x) / np.exp(x).sum(axis=2, keepdims=True), rtol=1e-12)


def test_infogain_identity_is_softmax_with_loss(xp):
    x, labels, _ = infogain_case(shape=(4, 5), seed=8)
    _, info_bottom, info_top = run(xp, infogain_text(), [x, labels, np.eye(5)])
    _, soft_bottom, soft_top = run(xp, 'name: "s" type: "SoftmaxWithLoss"', [x, labels])
    np.testing.assert_allclose(loss_of(info_top), loss_of(soft_top), rtol=1e-12)
    np.testing.assert_allclose(host(info_bottom[0].diff), host(soft_bottom[0].diff), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("ignore", [None, 0])
def test_infogain_gradient(xp, ignore):
    x, labels, h = infogain_case(shape=(2, 3, 2), seed=9, ignore=ignore)
    check_gradient(xp, infogain_text(ignore=ignore), [x, labels, h])


def test_infogain_errors(xp, tmp_path):
    x, labels, h = infogain_case()
    with pytest.raises(LayerSetupError, match="source or as a third bottom"):
        run(xp, infogain_text(), [x, labels])
    with pytest.raises(LayerSetupError, match="cannot read the infogain matrix"):
        run(xp, infogain_text(source=tmp_path / "missing.binaryproto"), [x, labels])
    with pytest.raises(LayerSetupError, match="H must be 4x4"):
        run(xp, infogain_text(), [x, labels, np.eye(3)])
    with pytest.raises(LayerSetupError, match="normalize is deprecated"):
        run(xp, 'name: "l" type: "InfogainLoss" loss_param { normalize: true }', [x, labels, h])
    with pytest.raises(LayerSetupError, match="infogain matrix"):
        run(xp, infogain_text(), [x, labels, h], [True, False, True])
    layer = make_layer(infogain_text())
    assert [layer.allow_force_backward(i) for i in range(3)] == [True, False, False]


# --- ContrastiveLoss -------------------------------------------------------------------------------


def contrastive_reference(a, b, y, margin=1.0, legacy=False):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    n = a.shape[0]
    loss, grad = 0.0, np.zeros_like(a)
    for i in range(n):
        delta = a[i] - b[i]
        dist_sq = float(delta @ delta)
        dist = math.sqrt(dist_sq)
        if int(y[i]):
            loss += dist_sq
            grad[i] = delta / n
        elif legacy:
            loss += max(margin - dist_sq, 0.0)
            grad[i] = -delta / n if margin - dist_sq > 0 else 0.0
        else:
            loss += max(margin - dist, 0.0) ** 2
            grad[i] = -(margin - dist) / (dist + 1e-4) * delta / n if margin - dist > 0 else 0.0
    return loss / n / 2, grad


def contrastive_case(seed=10):
    """Pairs at chosen distances, none within 0.1 of the margin (1) in d or d^2."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, size=(8, 3))
    directions = rng.normal(size=(8, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    distances = np.array([0.3, 0.6, 0.8, 1.3, 1.7, 0.5, 0.85, 2.0])
    b = a + directions * distances[:, None]
    y = np.array([1, 0, 0, 0, 1, 0, 0.5, 2], np.float64)  # 0.5 truncates to 0 as in Caffe; 2 is similar
    return a, b, y


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("margin", [1.0, 2.0])
def test_contrastive_forward_backward(xp, legacy, margin):
    a, b, y = contrastive_case()
    text = (
        f'name: "l" type: "ContrastiveLoss" '
        f"contrastive_loss_param {{ margin: {margin} legacy_version: {str(legacy).lower()} }}"
    )
    _, bottom, top = run(xp, text, [a, b, y], [True, True, False])
    loss, grad = contrastive_reference(a, b, y, margin, legacy)
    np.testing.assert_allclose(loss_of(top), loss, rtol=1e-12)
    np.testing.assert_allclose(host(bottom[0].diff), grad, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(host(bottom[1].diff), -grad, rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("legacy", [False, True])
def test_contrastive_gradient(xp, legacy):
    a, b, y = contrastive_case(seed=11)
    legacy_field = f"legacy_version: {str(legacy).lower()}"
    text = f'name: "l" type: "ContrastiveLoss" contrastive_loss_param {{ {legacy_field} }}'
    # The non-legacy gradient divides by d + 1e-4 (as Caffe does), hence the looser threshold.
    check_gradient(xp, text, [a.reshape(8, 3, 1, 1), b.reshape(8, 3, 1, 1), y], (0, 1), threshold=2e-3)


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (((4, 3), (4, 2), (4,)), "same channels"),
        (((4, 3, 2), (4, 3, 2), (4,)), r"N x C \(x 1 x 1\)"),
        (((4, 3), (4, 3), (4, 2)), "one similarity label per pair"),
        (((4, 3), (3, 3), (4,)), "first dimension"),
    ],
)
def test_contrastive_shape_errors(xp, shapes, message):
    layer = make_layer('name: "l" type: "ContrastiveLoss"', xp=xp)
    with pytest.raises(LayerSetupError, match=message):
        layer.setup([Blob(s, np.float64, xp) for s in shapes], blobs(1, xp))


def test_contrastive_force_backward_and_labels(xp):
    layer = make_layer('name: "l" type: "ContrastiveLoss"')
    assert [layer.allow_force_backward(i) for i in range(3)] == [True, True, False]
    a, b, y = contrastive_case()
    with pytest.raises(LayerSetupError, match="similarity"):
        run(xp, 'name: "l" type: "ContrastiveLoss"', [a, b, y], [True, True, True])
