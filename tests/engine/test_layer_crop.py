"""Crop: Caffe's offset rules, gradient, CHECKs."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob


def crop_text(axis=None, offsets=()):
    fields = ([f"axis: {axis}"] if axis is not None else []) + [f"offset: {o}" for o in offsets]
    return 'name: "crop" type: "Crop" crop_param { ' + " ".join(fields) + " }"


def run(text, big, small, xp=np):
    layer = make_layer(text, xp)
    bottom, top = [random_blob(big, xp, seed=1), random_blob(small, xp, seed=2)], blobs(1, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    return layer, bottom, top[0]


@pytest.mark.parametrize(
    "axis, offsets, small, region",
    [
        (None, (), (1, 2, 3, 2), np.s_[:, :, :3, :2]),  # default axis 2, offset 0: the spatial axes only
        (None, (1,), (1, 2, 3, 2), np.s_[:, :, 1:4, 1:3]),  # one offset for every cropped axis
        (1, (1, 2, 0), (1, 2, 3, 2), np.s_[:, 1:3, 2:5, 0:2]),  # one offset per cropped axis
        (0, (1,), (1, 2, 3, 2), np.s_[1:2, 1:3, 1:4, 1:3]),  # axis 0 crops the batch too
        (-1, (2,), (1, 2, 3, 2), np.s_[:, :, :, 2:4]),  # a negative axis counts from the end
        (None, (), (2, 1, 5, 4), np.s_[:, :, :, :]),  # same spatial size, earlier axes of bottom 1 ignored
    ],
)
def test_forward_takes_the_offset_region(xp, axis, offsets, small, region):
    _, bottom, top = run(crop_text(axis, offsets), (2, 3, 5, 4), small, xp)
    want = host(bottom[0].data)[region]
    assert top.shape == want.shape
    np.testing.assert_array_equal(host(top.data), want)


def test_backward_puts_the_diff_back_in_place(xp):
    layer, bottom, top = run(crop_text(1, (1, 2, 0)), (2, 3, 5, 4), (1, 2, 3, 2), xp)
    top.diff[...] = xp.asarray(np.arange(top.data.size, dtype=float).reshape(top.shape) + 1)
    bottom[0].diff[...] = 9
    layer.backward([top], [True, False], bottom)
    want = np.zeros((2, 3, 5, 4))
    want[:, 1:3, 2:5, 0:2] = host(top.diff)
    np.testing.assert_array_equal(host(bottom[0].diff), want)


def test_gradient(xp):
    layer = make_layer(crop_text(offsets=(1,)), xp)
    bottom = [random_blob((2, 2, 4, 4), xp), random_blob((1, 1, 2, 3), xp)]
    GradientChecker().check(layer, bottom, blobs(1, xp), check_bottom=[0])


@pytest.mark.parametrize(
    "axis, offsets, small, message",
    [
        (None, (3,), (1, 1, 3, 2), "out-of-bounds"),
        (None, (), (1, 1, 6, 2), "out-of-bounds"),
        (1, (1, 1), (1, 1, 3, 2), "number of offset values"),
        (None, (), (1, 3, 5), "same number of axes"),
        (4, (), (1, 3, 5, 4), "axis"),
    ],
)
def test_caffe_checks(axis, offsets, small, message):
    with pytest.raises(LayerSetupError, match=message) as info:
        run(crop_text(axis, offsets), (2, 3, 5, 4), small)
    assert "'crop'" in str(info.value)
