"""Input and DummyData: tops shaped at setup, Input's reshape a no-op, DummyData's refill rule."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import LayerSetupError
from engine.testing import blobs, host, make_layer, random_blob


def input_layer(xp, params: str, tops: int = 1):
    top_text = " ".join(f'top: "t{i}"' for i in range(tops))
    return make_layer(f'name: "in" type: "Input" {top_text} input_param {{ {params} }}', xp)


def test_input_one_shape_per_top(xp):
    layer = input_layer(xp, "shape { dim: 2 dim: 3 } shape { dim: 4 }", tops=2)
    top = blobs(2, xp)
    layer.setup([], top)
    assert [t.shape for t in top] == [(2, 3), (4,)]


def test_input_single_shape_serves_every_top(xp):
    layer = input_layer(xp, "shape { dim: 5 dim: 1 dim: 2 }", tops=3)
    top = blobs(3, xp)
    layer.setup([], top)
    assert [t.shape for t in top] == [(5, 1, 2)] * 3


def test_input_without_shape_leaves_the_tops_alone(xp):
    layer = input_layer(xp, "", tops=2)
    top = blobs(2, xp)
    top[1].reshape((7, 2))
    layer.setup([], top)
    assert top[0].shape == () and top[1].shape == (7, 2)


def test_input_reshape_is_a_no_op_so_user_shape_and_values_persist(xp):
    layer = input_layer(xp, "shape { dim: 2 dim: 3 }")
    top = blobs(1, xp)
    layer.setup([], top)
    top[0].reshape((4, 3, 2))
    values = np.arange(24, dtype=np.float64).reshape(4, 3, 2)
    top[0].data[...] = xp.asarray(values)
    layer.reshape([], top)
    layer.forward([], top)
    assert top[0].shape == (4, 3, 2)
    np.testing.assert_array_equal(host(top[0].data), values)


def test_input_rejects_a_shape_count_that_fits_no_rule(xp):
    layer = input_layer(xp, "shape { dim: 1 } shape { dim: 2 }", tops=3)
    with pytest.raises(LayerSetupError, match=r"'in' \(Input\).*3 tops vs. 2 shapes"):
        layer.setup([], blobs(3, xp))


def test_input_takes_no_bottom(xp):
    layer = input_layer(xp, "shape { dim: 1 }")
    with pytest.raises(LayerSetupError, match="exactly 0 bottom"):
        layer.setup([random_blob((1,), xp)], blobs(1, xp))


def dummy(xp, params: str, tops: int = 1):
    top_text = " ".join(f'top: "t{i}"' for i in range(tops))
    return make_layer(f'name: "dummy" type: "DummyData" {top_text} dummy_data_param {{ {params} }}', xp)


def test_dummy_data_without_filler_is_zero_and_never_refilled(xp):
    layer = dummy(xp, "shape { dim: 2 dim: 3 }")
    top = blobs(1, xp)
    top[0].reshape((2, 3))
    top[0].data[...] = 9  # setup must overwrite this with the constant 0
    layer.setup([], top)
    assert top[0].shape == (2, 3)
    np.testing.assert_array_equal(host(top[0].data), np.zeros((2, 3)))
    top[0].data[...] = 5  # a constant top is filled once: forward leaves it alone
    layer.forward([], top)
    np.testing.assert_array_equal(host(top[0].data), np.full((2, 3), 5.0))


def test_dummy_data_constant_filler_fills_at_setup(xp):
    layer = dummy(xp, 'shape { dim: 3 } data_filler { type: "constant" value: 2.5 }')
    top = blobs(1, xp)
    layer.setup([], top)
    np.testing.assert_array_equal(host(top[0].data), np.full(3, 2.5))


def test_dummy_data_random_filler_draws_on_every_forward(xp):
    layer = dummy(xp, 'shape { dim: 4 dim: 5 } data_filler { type: "uniform" min: -2 max: 3 }')
    top = blobs(1, xp)
    layer.setup([], top)
    layer.forward([], top)
    first = host(top[0].data).copy()
    layer.forward([], top)
    second = host(top[0].data)
    for values in (first, second):
        assert values.min() >= -2 and values.max() <= 3 and np.unique(values).size > 10
    assert not np.array_equal(first, second)


def test_dummy_data_one_filler_and_shape_per_top(xp):
    params = (
        "shape { dim: 2 } shape { dim: 3 dim: 2 } "
        'data_filler { type: "constant" value: 1 } data_filler { type: "gaussian" std: 0.1 }'
    )
    layer = dummy(xp, params, tops=2)
    top = blobs(2, xp)
    layer.setup([], top)
    assert [t.shape for t in top] == [(2,), (3, 2)]
    np.testing.assert_array_equal(host(top[0].data), np.ones(2))
    top[0].data[...] = 4
    layer.forward([], top)
    np.testing.assert_array_equal(host(top[0].data), np.full(2, 4.0))  # constant: not refilled
    drawn = host(top[1].data).copy()
    assert np.abs(drawn).max() > 0
    layer.forward([], top)
    assert not np.array_equal(drawn, host(top[1].data))  # gaussian: drawn again


def test_dummy_data_shared_filler_fills_every_top(xp):
    layer = dummy(xp, 'shape { dim: 2 } data_filler { type: "constant" value: -1 }', tops=3)
    top = blobs(3, xp)
    layer.setup([], top)
    for t in top:
        np.testing.assert_array_equal(host(t.data), np.full(2, -1.0))


def test_dummy_data_legacy_dims_once_or_per_top(xp):
    layer = dummy(xp, "num: 2 num: 5 channels: 3 height: 4 width: 1", tops=2)
    top = blobs(2, xp)
    layer.setup([], top)
    assert [t.shape for t in top] == [(2, 3, 4, 1), (5, 3, 4, 1)]


@pytest.mark.parametrize(
    ("params", "tops", "message"),
    [
        ("shape { dim: 2 } num: 1 channels: 1 height: 1 width: 1", 1, "both shape and the legacy"),
        ("num: 1 num: 2 channels: 1 height: 1 width: 1", 3, "'num' once or once per top"),
        ("num: 1 channels: 1 height: 1", 1, "'width' once or once per top"),
        ("shape { dim: 2 } shape { dim: 3 }", 3, "'shape' once or once per top"),
        ("", 1, "'shape' once or once per top"),
        (
            'shape { dim: 2 } data_filler { type: "constant" } data_filler { type: "constant" }',
            3,
            "data fillers",
        ),
    ],
)
def test_dummy_data_rejects_bad_parameters(xp, params, tops, message):
    with pytest.raises(LayerSetupError, match=rf"'dummy' \(DummyData\).*{message}"):
        dummy(xp, params, tops).setup([], blobs(tops, xp))
