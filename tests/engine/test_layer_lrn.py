"""LRN across and within channels: Caffe's reference loops, gradients, CHECKs, golden."""

from __future__ import annotations

import numpy as np
import pytest
from vision_support import replay_golden_layer

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob


def lrn_text(**fields: object) -> str:
    return 'name: "n" type: "LRN" lrn_param { ' + " ".join(f"{k}: {v}" for k, v in fields.items()) + " }"


def reference_lrn(x, local_size=5, alpha=1.0, beta=0.75, k=1.0, within=False):
    """Caffe's test reference: one element at a time, its window clipped to the blob."""
    size = local_size
    alpha, beta, k = (float(np.float32(v)) for v in (alpha, beta, k))  # the schema's fields are float32
    n, c, h, w = x.shape
    half = (size - 1) // 2
    y = np.empty_like(x)
    for i, ch, r, col in np.ndindex(*x.shape):
        if within:
            window = x[
                i,
                ch,
                max(r - half, 0) : min(r - half + size, h),
                max(col - half, 0) : min(col - half + size, w),
            ]
            scale = 1.0 + alpha / size**2 * (window**2).sum()
        else:
            window = x[i, max(ch - half, 0) : min(ch - half + size, c), r, col]
            scale = k + alpha / size * (window**2).sum()
        y[i, ch, r, col] = x[i, ch, r, col] * scale**-beta
    return y


def run(layer, shape, xp=np):
    bottom, top = [random_blob(shape, xp)], blobs(1, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    return bottom[0], top[0]


@pytest.mark.parametrize(
    "fields",
    [
        {},  # Caffe's defaults: local_size 5, alpha 1, beta 0.75, k 1
        {"local_size": 3, "alpha": 0.5, "beta": 0.6, "k": 2.5},
        {"local_size": 9, "alpha": 2.0, "beta": 1.2},  # the window is wider than the 7 channels
    ],
)
def test_across_channels_matches_reference(xp, fields):
    x, y = run(make_layer(lrn_text(**fields), xp), (2, 7, 3, 3), xp)
    assert y.shape == (2, 7, 3, 3)
    np.testing.assert_allclose(host(y.data), reference_lrn(host(x.data), **fields), rtol=1e-12)


@pytest.mark.parametrize("fields", [{}, {"local_size": 3, "alpha": 0.5, "beta": 0.6}, {"local_size": 7}])
def test_within_channel_matches_reference(xp, fields):
    layer = make_layer(lrn_text(norm_region="WITHIN_CHANNEL", **fields), xp)
    x, y = run(layer, (2, 3, 5, 4), xp)
    np.testing.assert_allclose(host(y.data), reference_lrn(host(x.data), within=True, **fields), rtol=1e-12)


def test_within_channel_ignores_k_as_caffe_does(xp):
    plain = run(make_layer(lrn_text(norm_region="WITHIN_CHANNEL"), xp), (1, 2, 4, 4), xp)[1]
    shifted = run(make_layer(lrn_text(norm_region="WITHIN_CHANNEL", k=5), xp), (1, 2, 4, 4), xp)[1]
    np.testing.assert_array_equal(host(plain.data), host(shifted.data))


@pytest.mark.parametrize(
    "fields",
    [
        {"alpha": 0.7, "beta": 0.8, "k": 1.5},
        {"local_size": 3, "norm_region": "WITHIN_CHANNEL", "alpha": 2.0},
        {"local_size": 5, "norm_region": "WITHIN_CHANNEL", "beta": 1.1},
    ],
)
def test_gradients(xp, fields):
    layer = make_layer(lrn_text(**fields), xp)
    GradientChecker(stepsize=1e-3, threshold=1e-3).check(layer, [random_blob((2, 6, 3, 4), xp)], blobs(1, xp))


def test_caffe_checks():
    with pytest.raises(LayerSetupError, match="odd values") as info:
        run(make_layer(lrn_text(local_size=4)), (1, 5, 2, 2))
    assert "'n'" in str(info.value)
    with pytest.raises(LayerSetupError, match="4 axes"):
        run(make_layer(lrn_text()), (2, 5, 3))


def test_matches_caffe_golden(xp, goldens):
    replay_golden_layer(goldens, "lrn_across", "lrn", xp)
