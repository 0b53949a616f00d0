"""Accuracy against a loop-by-loop reference of Caffe's rule, and Caffe's goldens."""

from __future__ import annotations

import numpy as np
import pytest

from engine.blob import Blob
from engine.errors import LayerSetupError
from engine.testing import blobs, host, make_layer


def blob_of(xp, values, dtype=np.float32) -> Blob:
    values = np.asarray(values, dtype)
    blob = Blob(values.shape, dtype, xp)
    blob.data[...] = xp.asarray(values)
    return blob


def reference(scores, labels, axis=1, top_k=1, ignore=None):
    """Caffe's loops: a label is a hit when fewer than top_k other classes score >= it."""
    x = np.moveaxis(np.asarray(scores), axis, -1).reshape(-1, np.asarray(scores).shape[axis])
    classes = x.shape[1]
    hits, count = 0, 0
    per_hits, per_count = [0] * classes, [0] * classes
    for row, label in zip(x, np.asarray(labels).reshape(-1)):
        label = int(label)
        if ignore is not None and label == ignore:
            continue
        better = sum(1 for k in range(classes) if k != label and row[k] >= row[label])
        count += 1
        per_count[label] += 1
        if better < top_k:
            hits += 1
            per_hits[label] += 1
    per_class = [h / n if n else 0.0 for h, n in zip(per_hits, per_count)]
    return (hits / count if count else 0.0), np.array(per_class)


def layer_text(top_k=1, axis=1, ignore=None):
    extra = f"ignore_label: {ignore}" if ignore is not None else ""
    return f'name: "acc" type: "Accuracy" accuracy_param {{ top_k: {top_k} axis: {axis} {extra} }}'


def run(xp, text, scores, labels, ntop=2):
    layer = make_layer(text, xp=xp, dtype=np.float32)
    bottom = [blob_of(xp, scores), blob_of(xp, labels)]
    top = blobs(ntop, xp, np.float32)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    return layer, bottom, top


def random_case(shape, axis, seed=0, ignore=None):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=shape)
    labels = rng.integers(0, shape[axis], size=shape[:axis] + shape[axis + 1 :]).astype(np.float64)
    if ignore is not None:
        labels.flat[::4] = ignore
    return scores, labels


@pytest.mark.parametrize("top_k", [1, 2, 4])
@pytest.mark.parametrize("ignore", [None, 3])
def test_matches_reference(xp, top_k, ignore):
    scores, labels = random_case((40, 6), 1, seed=top_k, ignore=ignore)
    _, _, top = run(xp, layer_text(top_k=top_k, ignore=ignore), scores, labels)
    accuracy, per_class = reference(scores.astype(np.float32), labels, 1, top_k, ignore)
    assert host(top[0].data).shape == () and host(top[1].data).shape == (6,)
    assert float(host(top[0].data)) == np.float32(accuracy)
    np.testing.assert_array_equal(host(top[1].data), per_class.astype(np.float32))
    if ignore is not None:
        assert host(top[1].data)[ignore] == 0  # the ignored class has no samples


@pytest.mark.parametrize(("shape", "axis"), [((2, 5, 3, 2), 1), ((3, 4, 5), 2), ((3, 4, 5), -1)])
def test_spatial_and_other_axes(xp, shape, axis):
    canonical = axis % len(shape)
    scores, labels = random_case(shape, canonical, seed=4)
    _, _, top = run(xp, layer_text(top_k=2, axis=axis), scores, labels)
    accuracy, per_class = reference(scores.astype(np.float32), labels, canonical, 2)
    assert float(host(top[0].data)) == np.float32(accuracy)
    np.testing.assert_array_equal(host(top[1].data), per_class.astype(np.float32))


def test_ties_count_against_the_label(xp):
    # Caffe master counts every other class scoring >= the label's score, so a tie is a miss
    # at top 1 whichever class comes first; the top-2 accuracy still counts it.
    scores = [[1.0, 3.0, 3.0, 0.0], [3.0, 3.0, 1.0, 0.0], [5.0, 2.0, 2.0, 2.0]]
    labels = [1.0, 0.0, 2.0]
    _, _, top1 = run(xp, layer_text(top_k=1), scores, labels)
    _, _, top2 = run(xp, layer_text(top_k=2), scores, labels)
    _, _, top3 = run(xp, layer_text(top_k=3), scores, labels)
    assert float(host(top1[0].data)) == 0.0
    assert float(host(top2[0].data)) == np.float32(2 / 3)
    assert float(host(top3[0].data)) == np.float32(2 / 3)  # row 3: three rivals tie or beat label 2


def test_every_label_ignored_gives_zero(xp):
    scores, _ = random_case((3, 4), 1)
    _, _, top = run(xp, layer_text(ignore=-1), scores, [-1.0, -1.0, -1.0])
    assert float(host(top[0].data)) == 0.0
    assert not host(top[1].data).any()


def test_single_top(xp):
    scores, labels = random_case((10, 3), 1, seed=8)
    _, _, top = run(xp, layer_text(), scores, labels, ntop=1)
    assert float(host(top[0].data)) == np.float32(reference(scores.astype(np.float32), labels)[0])


def test_no_backward(xp):
    scores, labels = random_case((4, 3), 1)
    layer, bottom, top = run(xp, layer_text(), scores, labels)
    assert not layer.allow_force_backward(0) and not layer.allow_force_backward(1)
    layer.backward(top, [False, False], bottom)  # nothing asked, nothing done
    with pytest.raises(NotImplementedError, match="Accuracy layer 'acc' cannot backpropagate"):
        layer.backward(top, [True, False], bottom)


@pytest.mark.parametrize(
    ("text", "score_shape", "label_shape", "message"),
    [
        (layer_text(top_k=5), (2, 4), (2,), r"top_k \(5\).*classes \(4\)"),
        (layer_text(), (2, 4, 3), (2,), "number of labels"),
        (layer_text(axis=3), (2, 4, 3), (2,), "axis 3 out of range"),
    ],
)
def test_bad_shapes_raise(xp, text, score_shape, label_shape, message):
    layer = make_layer(text, xp=xp)
    bottom = [Blob(score_shape, np.float64, xp), Blob(label_shape, np.float64, xp)]
    with pytest.raises((LayerSetupError, ValueError), match=message):
        layer.setup(bottom, blobs(1, xp))


@pytest.mark.parametrize("bad", [4.0, -2.0, 4.5])
def test_bad_label_raises(xp, bad):
    scores, _ = random_case((2, 4), 1)
    with pytest.raises(LayerSetupError, match=r"'acc' \(Accuracy\): labels must lie in \[0, 4\)"):
        run(xp, layer_text(), scores, [0.0, bad])


def test_matches_caffe_golden(xp, goldens):
    io = np.load(goldens / "layers" / "accuracy_test" / "io.npz")
    for key, top_k in (("acc", 1), ("acc_top2", 2)):
        _, _, top = run(xp, layer_text(top_k=top_k), io["data/score"], io["data/label"], ntop=1)
        assert np.array_equal(host(top[0].data), io[f"data/{key}"])
