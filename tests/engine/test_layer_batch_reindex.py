"""BatchReindex: gather along the batch axis, scatter-add gradient, index checks."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob

PERMUTATION = [2, 0, 2, 1, 2]  # selects, reorders and repeats samples


def reindex(xp):
    return make_layer('name: "ri" type: "BatchReindex" bottom: "x" bottom: "i" top: "y"', xp)


def index_blob(xp, indices=PERMUTATION):
    blob = random_blob((len(indices),), xp)
    blob.data[...] = xp.asarray(np.asarray(indices, np.float64))
    return blob


def test_batch_reindex_forward_matches_reference(xp):
    bottom, top = [random_blob((3, 2, 2), xp), index_blob(xp)], blobs(1, xp)
    layer = reindex(xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    x = host(bottom[0].data)
    want = np.zeros((5, 2, 2))
    for m, n in enumerate(PERMUTATION):
        for index in np.ndindex(2, 2):
            want[(m, *index)] = x[(n, *index)]
    assert top[0].shape == (5, 2, 2)
    np.testing.assert_array_equal(host(top[0].data), want)


def test_batch_reindex_backward_sums_repeated_samples(xp):
    bottom, top = [random_blob((4, 2), xp), index_blob(xp)], blobs(1, xp)
    layer = reindex(xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    dy = np.arange(10.0).reshape(5, 2)
    top[0].diff[...] = xp.asarray(dy)
    bottom[0].diff[...] = 7  # overwritten, not added to
    layer.backward(top, [True, False], bottom)
    want = np.zeros((4, 2))
    for m, n in enumerate(PERMUTATION):
        want[n] += dy[m]
    np.testing.assert_array_equal(host(bottom[0].diff), want)  # sample 3 was never selected: zero


def test_batch_reindex_gradient(xp):
    bottom = [random_blob((3, 2), xp), index_blob(xp)]
    GradientChecker().check(reindex(xp), bottom, blobs(1, xp), check_bottom=[0])


@pytest.mark.parametrize("indices", [[0, 3], [-1, 0], [1, 3.5], [-0.5]])
def test_batch_reindex_rejects_indices_outside_the_batch(xp, indices):
    bottom, top = [random_blob((3, 2), xp), index_blob(xp, indices)], blobs(1, xp)
    layer = reindex(xp)
    layer.setup(bottom, top)
    with pytest.raises(LayerSetupError, match=r"'ri' \(BatchReindex\).*indices must lie in \[0, 3\)"):
        layer.forward(bottom, top)


def test_batch_reindex_truncates_fractional_indices_as_caffe(xp):
    bottom, top = [random_blob((3, 2), xp), index_blob(xp, [2.7, 0.2])], blobs(1, xp)
    layer = reindex(xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    x = host(bottom[0].data)
    np.testing.assert_array_equal(host(top[0].data), [x[2], x[0]])


def test_batch_reindex_needs_one_axis_of_indices(xp):
    with pytest.raises(LayerSetupError, match="must have one axis"):
        reindex(xp).setup([random_blob((3, 2), xp), random_blob((2, 1), xp)], blobs(1, xp))


def test_batch_reindex_gives_no_gradient_to_the_indices(xp):
    bottom, top = [random_blob((3, 2), xp), index_blob(xp)], blobs(1, xp)
    layer = reindex(xp)
    layer.setup(bottom, top)
    assert layer.allow_force_backward(0) and not layer.allow_force_backward(1)
    with pytest.raises(LayerSetupError, match="cannot backpropagate to the indices"):
        layer.backward(top, [True, True], bottom)
