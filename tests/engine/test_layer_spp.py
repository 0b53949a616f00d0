"""SPP: Caffe's shapes, the pyramid of pooled bins, gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob


def spp_text(height: int, pool: str = "MAX") -> str:
    return f'name: "spp" type: "SPP" spp_param {{ pyramid_height: {height} pool: {pool} }}'


def run(layer, shape, xp=np, forward=True):
    bottom, top = [random_blob(shape, xp)], blobs(1, xp)
    layer.setup(bottom, top)
    if forward:
        layer.forward(bottom, top)
    return bottom[0], top[0]


def reference_level(x, bins, method):
    """One level: bins x bins windows of ceil(size / bins), centred by padding, clipped to the image."""
    n, c, h, w = x.shape
    kh, kw = math.ceil(h / bins), math.ceil(w / bins)
    ph, pw = (kh * bins - h + 1) // 2, (kw * bins - w + 1) // 2
    out = []
    for i in range(bins):
        for j in range(bins):
            hs, ws = i * kh - ph, j * kw - pw
            window = x[:, :, max(hs, 0) : min(hs + kh, h), max(ws, 0) : min(ws + kw, w)]
            size = (min(hs + kh, h + ph) - hs) * (min(ws + kw, w + pw) - ws)
            out.append(window.max((2, 3)) if method == "MAX" else window.sum((2, 3)) / size)
    return np.stack(out, -1).reshape(n, -1)  # (n, c * bins^2), channel-major as Flatten gives


@pytest.mark.parametrize(
    "shape, height, out",
    [
        ((2, 3, 9, 8), 3, (2, 63)),
        ((10, 3, 7, 7), 3, (10, 63)),
        ((4, 3, 1024, 765), 5, (4, 1023)),
        ((2, 3, 5, 4), 1, (2, 3, 1, 1)),  # one level: the pooling top itself
    ],
)
def test_caffe_output_shapes(shape, height, out):
    _, y = run(make_layer(spp_text(height)), shape, forward=False)
    assert y.shape == out


@pytest.mark.parametrize("method", ["MAX", "AVE"])
@pytest.mark.parametrize("shape, height", [((2, 3, 9, 8), 3), ((1, 2, 7, 7), 3), ((2, 2, 5, 6), 1)])
def test_forward_concatenates_the_levels(xp, method, shape, height):
    x, y = run(make_layer(spp_text(height, method), xp), shape, xp)
    want = np.concatenate([reference_level(host(x.data), 2**level, method) for level in range(height)], 1)
    np.testing.assert_allclose(host(y.data).reshape(want.shape), want, rtol=1e-12)


@pytest.mark.parametrize("method", ["MAX", "AVE"])
def test_gradients(xp, method):
    layer = make_layer(spp_text(3, method), xp)
    bottom = [random_blob((1, 2, 9, 8), xp)]
    bottom[0].data[...] = xp.asarray(np.random.default_rng(0).permutation(144).reshape(1, 2, 9, 8) * 0.1)
    GradientChecker(stepsize=1e-3).check(layer, bottom, blobs(1, xp))


def test_checks():
    with pytest.raises(LayerSetupError, match="4 axes") as info:
        run(make_layer(spp_text(2)), (2, 3, 4))
    assert "'spp'" in str(info.value)
    with pytest.raises(LayerSetupError, match="smaller than kernel"):  # 5 rows in 4 bins: Caffe refuses too
        run(make_layer(spp_text(3)), (1, 1, 5, 8))
