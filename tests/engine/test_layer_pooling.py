"""Pooling: Caffe's own test cases, a loop reference, gradients, stochastic pooling, CHECKs, goldens."""

from __future__ import annotations

import math

import numpy as np
import pytest
from vision_support import replay_golden_layer

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob
from proto import caffe_pb2


def pool_text(**fields: object) -> str:
    return (
        'name: "p" type: "Pooling" pooling_param { ' + " ".join(f"{k}: {v}" for k, v in fields.items()) + " }"
    )


def reference_pool(x, kernel, stride, pad, method="MAX", ceil=True):
    """Caffe's CPU loops, one window at a time: (top, mask)."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pad
    rnd = math.ceil if ceil else math.floor
    out_h, out_w = int(rnd((h + 2 * ph - kh) / sh)) + 1, int(rnd((w + 2 * pw - kw) / sw)) + 1
    if ph or pw:
        out_h -= (out_h - 1) * sh >= h + ph
        out_w -= (out_w - 1) * sw >= w + pw
    top = np.zeros((n, c, out_h, out_w))
    mask = np.full(top.shape, -1.0)
    for i in range(out_h):
        for j in range(out_w):
            hs, ws = i * sh - ph, j * sw - pw
            he, we = min(hs + kh, h + ph), min(ws + kw, w + pw)
            size = (he - hs) * (we - ws)
            hs, ws, he, we = max(hs, 0), max(ws, 0), min(he, h), min(we, w)
            window = x[:, :, hs:he, ws:we].reshape(n, c, -1)
            if method == "MAX":
                arg = window.argmax(-1)  # the first maximum in raster order
                top[:, :, i, j] = window.max(-1)
                mask[:, :, i, j] = (hs + arg // (we - ws)) * w + ws + arg % (we - ws)
            else:
                top[:, :, i, j] = window.sum(-1) / size
    return top, mask


def run(layer, shape, xp=np, ntop=1, values=None):
    bottom = [random_blob(shape, xp)]
    if values is not None:
        bottom[0].data[...] = xp.asarray(values)
    top = blobs(ntop, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    return bottom[0], top


def distinct(shape, seed=0):
    """Values 0.1 apart in random order: no ties, and no tie within a gradient check's step."""
    return np.random.default_rng(seed).permutation(math.prod(shape)).reshape(shape) * 0.1 - 1.0


# --- Caffe's test_pooling_layer.cpp cases ----------------------------------------------------
@pytest.mark.parametrize(
    "fields, out",
    [
        ({"kernel_size": 3, "stride": 2}, (2, 3, 3, 2)),
        ({"kernel_size": 3, "stride": 2, "pad": 1}, (2, 3, 4, 3)),
        ({"global_pooling": "true"}, (2, 3, 1, 1)),
        ({"kernel_size": 3, "stride": 2, "round_mode": "FLOOR"}, (2, 3, 2, 2)),
    ],
)
def test_output_shapes_of_caffes_setup_tests(fields, out):
    _, (y,) = run(make_layer(pool_text(**fields)), (2, 3, 6, 5))
    assert y.shape == out


def test_caffe_forward_max_with_mask(xp):
    image = np.array([[1, 2, 5, 2, 3], [9, 4, 1, 4, 8], [1, 2, 5, 2, 3]], float)
    _, (y, mask) = run(
        make_layer(pool_text(kernel_size=2), xp), (2, 2, 3, 5), xp, 2, np.broadcast_to(image, (2, 2, 3, 5))
    )
    np.testing.assert_array_equal(host(y.data)[1, 1], [[9, 5, 5, 8], [9, 5, 5, 8]])
    np.testing.assert_array_equal(host(mask.data)[0, 1], [[5, 2, 2, 9], [5, 12, 12, 9]])


def test_caffe_forward_max_padded(xp):
    image = np.array([[1, 2, 4], [2, 3, 2], [4, 2, 1]], float)
    _, (y,) = run(
        make_layer(pool_text(kernel_size=3, stride=2, pad=2), xp), (1, 1, 3, 3), xp, 1, image[None, None]
    )
    np.testing.assert_array_equal(host(y.data)[0, 0], [[1, 4, 4], [4, 4, 4], [4, 4, 1]])


def test_caffe_forward_ave_divides_by_padded_window(xp):
    _, (y,) = run(
        make_layer(pool_text(pool="AVE", kernel_size=3, pad=1), xp),
        (1, 1, 3, 3),
        xp,
        1,
        np.full((1, 1, 3, 3), 2.0),
    )
    np.testing.assert_allclose(
        host(y.data)[0, 0], [[8 / 9, 4 / 3, 8 / 9], [4 / 3, 2, 4 / 3], [8 / 9, 4 / 3, 8 / 9]]
    )


# --- loop reference --------------------------------------------------------------------------
GEOMETRIES = [
    ({"kernel_size": 3, "stride": 2}, (2, 3, 6, 5)),  # ceil: last windows cut
    ({"kernel_size": 3, "stride": 2, "pad": 1}, (2, 2, 6, 5)),
    ({"kernel_size": 2, "stride": 2, "pad": 1}, (1, 2, 4, 4)),  # ceil would start a window in the padding
    ({"kernel_h": 3, "kernel_w": 2, "stride_h": 1, "stride_w": 3, "pad_h": 2, "pad_w": 1}, (2, 2, 5, 7)),
    ({"kernel_size": 3, "stride": 2, "round_mode": "FLOOR"}, (1, 2, 8, 7)),
    ({"kernel_size": 4, "stride": 3, "pad": 2, "round_mode": "FLOOR"}, (1, 2, 9, 8)),
    ({"global_pooling": "true"}, (2, 3, 4, 5)),
    ({"kernel_size": 3, "stride": 2}, (1, 1, 2, 2)),  # a kernel larger than the image, stride 2
    # Padding on one axis clips the other's last window too (Caffe tests pad_h || pad_w): rows give
    # ceil(2 / 3) + 1 = 2, and the second row window, starting at row 3 >= 3 + 0, is dropped.
    ({"kernel_h": 1, "kernel_w": 3, "stride_h": 3, "stride_w": 1, "pad_h": 0, "pad_w": 1}, (1, 2, 3, 4)),
]


def geometry(fields, shape):
    if fields.get("global_pooling"):
        return shape[2:], (1, 1), (0, 0)
    if "kernel_h" in fields:
        f = fields
        return (f["kernel_h"], f["kernel_w"]), (f["stride_h"], f["stride_w"]), (f["pad_h"], f["pad_w"])
    return (fields["kernel_size"],) * 2, (fields.get("stride", 1),) * 2, (fields.get("pad", 0),) * 2


@pytest.mark.parametrize("method", ["MAX", "AVE"])
@pytest.mark.parametrize("fields, shape", GEOMETRIES)
def test_forward_matches_caffe_loops(xp, method, fields, shape):
    x = distinct(shape)
    _, top = run(make_layer(pool_text(pool=method, **fields), xp), shape, xp, 2 if method == "MAX" else 1, x)
    want, mask = reference_pool(x, *geometry(fields, shape), method, fields.get("round_mode") != "FLOOR")
    assert top[0].shape == want.shape
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-12)
    if method == "MAX":
        np.testing.assert_array_equal(host(top[1].data), mask)


@pytest.mark.parametrize("method", ["MAX", "AVE"])
@pytest.mark.parametrize("fields, shape", GEOMETRIES[:5] + GEOMETRIES[6:7])
def test_gradients(xp, method, fields, shape):
    layer = make_layer(pool_text(pool=method, **fields), xp)
    bottom = [random_blob(shape, xp)]
    bottom[0].data[...] = xp.asarray(distinct(shape, 1))
    GradientChecker(stepsize=1e-3, threshold=1e-3).check(layer, bottom, blobs(1, xp))


def test_max_backward_routes_to_the_first_maximum_on_ties(xp):
    x = np.array([[[[1.0, 3, 3], [3, 0, 2]]]])  # both windows hold several 3s; the first one wins
    layer = make_layer(pool_text(kernel_size=2), xp)
    bottom, top = run(layer, x.shape, xp, 1, x)
    top[0].diff[...] = xp.asarray([[[[10.0, 20.0]]]])
    bottom.diff[...] = 5  # overwritten, not accumulated
    layer.backward(top, [True], [bottom])
    np.testing.assert_array_equal(host(bottom.diff)[0, 0], [[0, 30, 0], [0, 0, 0]])


# --- STOCHASTIC ------------------------------------------------------------------------------
def test_stochastic_train_draws_window_values_in_proportion(xp):
    x = np.zeros((1, 1, 2, 2))
    x[0, 0] = [[1, 2], [3, 4]]
    layer = make_layer(pool_text(pool="STOCHASTIC", kernel_size=2), xp)
    bottom = [random_blob((4000, 1, 2, 2), xp)]
    bottom[0].data[...] = xp.asarray(np.broadcast_to(x, (4000, 1, 2, 2)))
    top = blobs(1, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    drawn = host(top[0].data).ravel()
    counts = np.array([(drawn == v).sum() for v in (1, 2, 3, 4)])
    assert counts.sum() == 4000
    np.testing.assert_allclose(counts / 4000, [0.1, 0.2, 0.3, 0.4], atol=0.03)
    top[0].diff[...] = 1
    layer.backward(top, [True], bottom)
    diff = host(bottom[0].diff).reshape(4000, 4)
    np.testing.assert_array_equal(diff.sum(1), 1)  # the gradient goes to the drawn element only
    np.testing.assert_array_equal(diff @ [1, 2, 3, 4], drawn)


def test_stochastic_test_phase_weights_values_by_themselves(xp):
    x = np.abs(distinct((2, 2, 5, 4))) + 0.1
    layer = make_layer(pool_text(pool="STOCHASTIC", kernel_size=3, stride=2), xp, phase=caffe_pb2.TEST)
    _, (y,) = run(layer, x.shape, xp, 1, x)
    squares, _ = reference_pool(x**2, (3, 3), (2, 2), (0, 0), "AVE")
    sums, _ = reference_pool(x, (3, 3), (2, 2), (0, 0), "AVE")
    np.testing.assert_allclose(host(y.data), squares / sums, rtol=1e-12)  # the window sizes cancel
    layer = make_layer(pool_text(pool="STOCHASTIC", kernel_size=3, stride=2), xp, phase=caffe_pb2.TEST)
    bottom = [random_blob(x.shape, xp, low=0.2, high=1.0)]
    GradientChecker(stepsize=1e-3, threshold=1e-3).check(layer, bottom, blobs(1, xp))


@pytest.mark.parametrize(
    ("fields", "ntop"),
    [({"kernel_size": 2, "stride": 2}, 1), ({"kernel_size": 2, "stride": 2}, 2), ({"kernel_size": 3}, 1)],
    ids=["tiled", "tiled-with-mask", "overlapping"],
)
def test_max_passes_nan_over_as_caffes_comparison_does(xp, fields, ntop):
    """Caffe: top = -FLT_MAX, then each value with value > top takes over. NaN is never greater, so a
    window's NaN is skipped and an all-NaN window gives -FLT_MAX with mask -1 and no gradient."""
    x = distinct((1, 1, 4, 4))
    x[0, 0, 0, 0] = np.nan  # beside finite values
    x[0, 0, 2:, 2:] = np.nan  # a whole 2 x 2 window
    layer = make_layer(pool_text(**fields), xp)
    bottom, top = run(layer, x.shape, xp, ntop, x)
    k = fields["kernel_size"]
    s = fields.get("stride", 1)
    rows = (4 - k) // s + 1
    want = np.empty((rows, rows))
    chosen = np.full((rows, rows), -1)
    for i in range(rows):
        for j in range(rows):
            best = np.finfo(np.float32).min
            for h in range(i * s, i * s + k):
                for w in range(j * s, j * s + k):
                    if x[0, 0, h, w] > best:
                        best, chosen[i, j] = x[0, 0, h, w], h * 4 + w
            want[i, j] = best
    np.testing.assert_array_equal(host(top[0].data)[0, 0], want)
    if ntop == 2:
        np.testing.assert_array_equal(host(top[1].data)[0, 0], chosen)
    top[0].diff[...] = 1
    layer.backward(top[:1], [True], [bottom])
    grad = np.zeros(16)
    np.add.at(grad, chosen[chosen >= 0], 1)
    np.testing.assert_array_equal(host(bottom.diff)[0, 0], grad.reshape(4, 4))


# --- Caffe's CHECKs --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fields, ntop, message",
    [
        ({"kernel_size": 2, "kernel_h": 2, "kernel_w": 2}, 1, "not both"),
        ({"kernel_h": 2}, 1, "kernel_h and kernel_w"),
        ({"kernel_size": 0}, 1, "cannot be zero"),
        ({"kernel_size": 3, "pad": 1, "pad_h": 1, "pad_w": 1}, 1, "pad is pad OR"),
        ({"kernel_size": 3, "stride_h": 2}, 1, "stride is stride OR"),
        ({"kernel_size": 3, "pad": 3}, 1, "smaller than kernel"),
        ({"pool": "STOCHASTIC", "kernel_size": 3, "pad": 1}, 1, "only for average and max"),
        ({"global_pooling": "true", "kernel_size": 2}, 1, "cannot be specified"),
        ({"global_pooling": "true", "stride": 2}, 1, "only pad = 0 and stride = 1"),
        ({"pool": "AVE", "kernel_size": 2}, 2, "second"),
        ({"kernel_size": 2}, 3, "at most 2 top"),
        ({"kernel_size": 9}, 1, "does not fit"),
    ],
)
def test_caffe_checks(fields, ntop, message):
    with pytest.raises(LayerSetupError, match=message) as info:
        run(make_layer(pool_text(**fields)), (1, 1, 5, 5), ntop=ntop)
    assert "'p'" in str(info.value)


def test_kernel_size_beside_a_lone_kernel_h_is_accepted():
    """Caffe refuses kernel_size only beside *both* kernel_h and kernel_w; kernel_size then wins."""
    _, (y,) = run(make_layer(pool_text(kernel_size=3, kernel_h=2)), (1, 1, 5, 5))
    assert y.shape == (1, 1, 3, 3)  # kernel 3 (kernel_h 2 would give 4 rows), stride 1, on 5 x 5


def test_needs_four_axes():
    with pytest.raises(LayerSetupError, match="4 axes"):
        run(make_layer(pool_text(kernel_size=2)), (2, 3, 4))


# --- Caffe goldens ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["pooling_max", "pooling_ave"])
def test_matches_caffe_golden(xp, goldens, case):
    replay_golden_layer(goldens, case, "pool", xp)


def test_windows_past_the_image_when_stride_exceeds_kernel(xp):
    """kernel 1, stride 2 on 4 rows gives ceil(3/2) + 1 = 3 rows: the last windows hold no pixel.

    Caffe leaves -FLT_MAX there for MAX and divides 0 by a pool size of 0 for AVE (NaN); no gradient
    flows from them.
    """
    x = distinct((1, 1, 4, 4))
    for method in ("MAX", "AVE"):
        layer = make_layer(pool_text(pool=method, kernel_size=1, stride=2), xp)
        bottom, (y,) = run(layer, x.shape, xp, 1, x)
        y_host = host(y.data)[0, 0]
        np.testing.assert_array_equal(y_host[:2, :2], x[0, 0, ::2, ::2])
        if method == "MAX":
            empty = np.finfo(np.float32).min
            assert np.all(y_host[2] == empty) and np.all(y_host[:, 2] == empty)
        else:
            assert np.all(np.isnan(y_host[2])) and np.all(np.isnan(y_host[:, 2]))
        y.diff[...] = 1
        layer.backward([y], [True], [bottom])
        want = np.zeros((4, 4))
        want[::2, ::2] = 1
        np.testing.assert_array_equal(host(bottom.diff)[0, 0], want)
