"""Split, Concat and Slice: naive references, shared storage, gradients, Caffe's CHECKs, goldens."""

from __future__ import annotations

import numpy as np
import pytest
from tests_support import close

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob

# --- Split -----------------------------------------------------------------------------------


def split(xp):
    return make_layer('name: "split" type: "Split" bottom: "x" top: "a" top: "b" top: "c"', xp)


def test_split_tops_view_the_bottom_data(xp):
    bottom, top = random_blob((2, 3, 4), xp), blobs(3, xp)
    layer = split(xp)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    bottom.data[...] = xp.asarray(np.arange(24.0).reshape(2, 3, 4))
    for t in top:
        assert t.shape == (2, 3, 4)
        np.testing.assert_array_equal(host(t.data), np.arange(24.0).reshape(2, 3, 4))


def test_split_backward_sums_the_top_diffs(xp):
    bottom, top = random_blob((3, 2), xp), blobs(3, xp)
    layer = split(xp)
    layer.setup([bottom], top)
    diffs = [np.random.default_rng(i).normal(size=(3, 2)) for i in range(3)]
    for t, d in zip(top, diffs):
        t.diff[...] = xp.asarray(d)
    layer.backward(top, [True], [bottom])
    expected = np.zeros((3, 2))
    for d in diffs:
        expected += d
    np.testing.assert_allclose(host(bottom.diff), expected, rtol=1e-12)


def test_split_single_top_copies_the_diff(xp):
    layer = make_layer('name: "s" type: "Split" bottom: "x" top: "a"', xp)
    bottom, top = random_blob((4,), xp), blobs(1, xp)
    layer.setup([bottom], top)
    top[0].diff[...] = xp.asarray([1.0, 2.0, 3.0, 4.0])
    layer.backward(top, [True], [bottom])
    np.testing.assert_array_equal(host(bottom.diff), [1.0, 2.0, 3.0, 4.0])


def test_split_leaves_bottom_diff_without_propagate_down(xp):
    bottom, top = random_blob((2, 2), xp), blobs(3, xp)
    layer = split(xp)
    layer.setup([bottom], top)
    bottom.diff[...] = 7
    for t in top:
        t.diff[...] = 1
    layer.backward(top, [False], [bottom])
    np.testing.assert_array_equal(host(bottom.diff), np.full((2, 2), 7.0))


def test_split_gradient(xp):
    GradientChecker().check(split(xp), [random_blob((2, 3), xp)], blobs(3, xp))


def test_split_refuses_in_place(xp):
    bottom = random_blob((2,), xp)
    with pytest.raises(LayerSetupError, match=r"\(Split\).*in-place"):
        split(xp).setup([bottom], [blobs(1, xp)[0], bottom, blobs(1, xp)[0]])


# --- Concat ----------------------------------------------------------------------------------


def concat_reference(arrays: list[np.ndarray], axis: int) -> np.ndarray:
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = np.zeros(shape)
    offset = 0
    for a in arrays:
        for index in np.ndindex(*a.shape):
            target = list(index)
            target[axis] += offset
            out[tuple(target)] = a[index]
        offset += a.shape[axis]
    return out


def concat(xp, params: str = "", bottoms: int = 2):
    bottom_text = " ".join(f'bottom: "b{i}"' for i in range(bottoms))
    return make_layer(f'name: "cat" type: "Concat" {bottom_text} top: "y" concat_param {{ {params} }}', xp)


@pytest.mark.parametrize(
    ("params", "shapes", "axis"),
    [
        ("", [(2, 3, 4), (2, 1, 4), (2, 2, 4)], 1),  # default axis 1 (channels)
        ("axis: 0", [(2, 3, 2), (4, 3, 2)], 0),
        ("axis: -1", [(2, 3, 1), (2, 3, 4)], 2),
        ("concat_dim: 0", [(1, 2, 2), (3, 2, 2)], 0),  # the legacy field
        ("axis: 2", [(2, 2, 1, 3), (2, 2, 2, 3)], 2),
    ],
)
def test_concat_forward_matches_reference(xp, params, shapes, axis):
    bottom = [random_blob(s, xp, seed=i) for i, s in enumerate(shapes)]
    top = blobs(1, xp)
    layer = concat(xp, params, len(shapes))
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    np.testing.assert_array_equal(host(top[0].data), concat_reference([host(b.data) for b in bottom], axis))


def test_concat_backward_gives_each_bottom_its_part(xp):
    bottom = [random_blob((2, 1, 3), xp), random_blob((2, 2, 3), xp)]
    top = blobs(1, xp)
    layer = concat(xp)
    layer.setup(bottom, top)
    dy = np.arange(18.0).reshape(2, 3, 3)
    top[0].diff[...] = xp.asarray(dy)
    bottom[1].diff[...] = -1
    layer.backward(top, [True, False], bottom)
    np.testing.assert_array_equal(host(bottom[0].diff), dy[:, :1])
    np.testing.assert_array_equal(host(bottom[1].diff), np.full((2, 2, 3), -1.0))  # not asked for


def test_concat_single_bottom_shares_data_and_diff(xp):
    bottom, top = random_blob((2, 3), xp), blobs(1, xp)
    layer = concat(xp, bottoms=1)
    layer.setup([bottom], top)
    bottom.data[...] = 3
    top[0].diff[...] = 4
    np.testing.assert_array_equal(host(top[0].data), np.full((2, 3), 3.0))
    np.testing.assert_array_equal(host(bottom.diff), np.full((2, 3), 4.0))


@pytest.mark.parametrize("params", ["", "axis: 0", "axis: -1"])
def test_concat_gradient(xp, params):
    shapes = {
        "": [(2, 1, 2), (2, 3, 2)],
        "axis: 0": [(1, 2, 2), (2, 2, 2)],
        "axis: -1": [(2, 2, 1), (2, 2, 3)],
    }
    bottom = [random_blob(s, xp, seed=i) for i, s in enumerate(shapes[params])]
    GradientChecker().check(concat(xp, params), bottom, blobs(1, xp))


@pytest.mark.parametrize(
    ("params", "shapes", "message"),
    [
        ("", [(2, 3, 4), (3, 3, 4)], "same shape except on the concat axis 1"),
        ("", [(2, 3, 4), (2, 3)], "same shape except"),
        ("axis: 1 concat_dim: 1", [(2, 3), (2, 3)], "either axis or concat_dim"),
        ("axis: 3", [(2, 3), (2, 3)], "axis 3 out of range"),
        ("concat_dim: 2", [(2, 3), (2, 3)], "concat_dim 2 out of range"),
    ],
)
def test_concat_rejects_bad_setups(xp, params, shapes, message):
    bottom = [random_blob(s, xp) for s in shapes]
    with pytest.raises(LayerSetupError, match=rf"'cat' \(Concat\).*{message}"):
        concat(xp, params, len(shapes)).setup(bottom, blobs(1, xp))


def test_concat_matches_caffe_golden(xp, goldens):
    io = np.load(goldens / "layers" / "concat" / "io.npz")
    bottom = [random_blob(io[f"data/{n}"].shape, xp, dtype=np.float32) for n in ("a", "b")]
    for blob, name in zip(bottom, ("a", "b")):
        blob.data[...] = xp.asarray(io[f"data/{name}"])
    top = blobs(1, xp, np.float32)
    layer = make_layer('name: "concat" type: "Concat" bottom: "a" bottom: "b" top: "cat"', xp, np.float32)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    assert close(host(top[0].data), io["data/cat"], 1e-6)
    # EuclideanLoss(cat, target) sends (cat - target) / num back to cat.
    top[0].diff[...] = xp.asarray((io["data/cat"] - io["data/target"]) / io["data/cat"].shape[0])
    layer.backward(top, [True, True], bottom)
    for blob, name in zip(bottom, ("a", "b")):
        assert close(host(blob.diff), io[f"diff/{name}"], 1e-5)


# --- Slice -----------------------------------------------------------------------------------


def slice_layer(xp, params: str = "", tops: int = 2):
    top_text = " ".join(f'top: "t{i}"' for i in range(tops))
    return make_layer(f'name: "slice" type: "Slice" bottom: "x" {top_text} slice_param {{ {params} }}', xp)


def slice_reference(x: np.ndarray, axis: int, sizes: list[int]) -> list[np.ndarray]:
    out, offset = [], 0
    for size in sizes:
        shape = list(x.shape)
        shape[axis] = size
        part = np.zeros(shape)
        for index in np.ndindex(*shape):
            source = list(index)
            source[axis] += offset
            part[index] = x[tuple(source)]
        out.append(part)
        offset += size
    return out


@pytest.mark.parametrize(
    ("params", "shape", "tops", "axis", "sizes"),
    [
        ("", (2, 6, 3), 3, 1, [2, 2, 2]),  # even split of the channels
        ("axis: 0", (4, 2, 3), 2, 0, [2, 2]),
        ("slice_point: 1 slice_point: 4", (2, 7, 3), 3, 1, [1, 3, 3]),
        ("axis: -1 slice_point: 3", (2, 2, 5), 2, 2, [3, 2]),
        ("slice_dim: 0 slice_point: 1", (3, 2), 2, 0, [1, 2]),  # the legacy field
    ],
)
def test_slice_forward_matches_reference(xp, params, shape, tops, axis, sizes):
    bottom, top = random_blob(shape, xp), blobs(tops, xp)
    layer = slice_layer(xp, params, tops)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    for got, want in zip(top, slice_reference(host(bottom.data), axis, sizes)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(host(got.data), want)


def test_slice_backward_assembles_the_bottom_diff(xp):
    bottom, top = random_blob((2, 5), xp), blobs(2, xp)
    layer = slice_layer(xp, "slice_point: 2")
    layer.setup([bottom], top)
    top[0].diff[...] = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    top[1].diff[...] = 9
    layer.backward(top, [True], [bottom])
    np.testing.assert_array_equal(host(bottom.diff), [[1, 2, 9, 9, 9], [3, 4, 9, 9, 9]])


def test_slice_single_top_shares_data_and_diff(xp):
    bottom, top = random_blob((3, 2), xp), blobs(1, xp)
    layer = slice_layer(xp, tops=1)
    layer.setup([bottom], top)
    bottom.data[...] = 2
    top[0].diff[...] = 5
    np.testing.assert_array_equal(host(top[0].data), np.full((3, 2), 2.0))
    np.testing.assert_array_equal(host(bottom.diff), np.full((3, 2), 5.0))


@pytest.mark.parametrize(("params", "tops"), [("slice_point: 1 slice_point: 3", 3), ("axis: 0", 2)])
def test_slice_gradient(xp, params, tops):
    GradientChecker().check(slice_layer(xp, params, tops), [random_blob((2, 4, 2), xp)], blobs(tops, xp))


@pytest.mark.parametrize(
    ("params", "shape", "tops", "message"),
    [
        ("", (2, 5), 2, r"number of tops \(2\) should evenly divide"),
        ("slice_point: 1", (2, 5), 3, "1 slice points for 3 tops"),
        ("slice_point: 3 slice_point: 2", (2, 5), 3, "must increase strictly"),
        ("slice_point: 2 slice_point: 2", (2, 5), 3, "must increase strictly"),
        ("slice_point: 5", (2, 5), 2, "must increase strictly"),
        ("slice_point: 0", (2, 5), 2, "must increase strictly"),
        ("slice_point: 1 slice_point: 2", (2, 2), 3, "cannot cut axis 1 of size 2 into 3"),
        ("axis: 1 slice_dim: 1", (2, 4), 2, "either axis or slice_dim"),
        ("axis: 2", (2, 4), 2, "out of range"),
    ],
)
def test_slice_rejects_bad_setups(xp, params, shape, tops, message):
    with pytest.raises(LayerSetupError, match=rf"'slice' \(Slice\).*{message}"):
        slice_layer(xp, params, tops).setup([random_blob(shape, xp)], blobs(tops, xp))
