"""MemoryData: reset() with float32 arrays (pycaffe's set_input_arrays), batches cycling through
them, references rather than copies, Caffe's top shapes, and pycaffe's array checks."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.errors import EngineError, LayerSetupError
from engine.testing import blobs, host, make_layer


def memory_layer(xp, batch_size=2, shape=(1, 2, 3), extra=""):
    c, h, w = shape
    return make_layer(
        f'name: "mem" type: "MemoryData" top: "data" top: "label" {extra} '
        f"memory_data_param {{ batch_size: {batch_size} channels: {c} height: {h} width: {w} }}",
        xp,
    )


def arrays(n=6, shape=(1, 2, 3)):
    data = np.arange(n * int(np.prod(shape)), dtype=np.float32).reshape(n, *shape)
    labels = np.arange(n, dtype=np.float32) * 10
    return data, labels


def test_batches_cycle_through_the_arrays(xp):
    layer = memory_layer(xp)
    top = blobs(2, xp)
    layer.setup([], top)
    assert top[0].shape == (2, 1, 2, 3) and top[1].shape == (2,)
    data, labels = arrays(6)
    layer.reset(data, labels)
    for rows in ([0, 1], [2, 3], [4, 5], [0, 1]):
        layer.forward([], top)
        np.testing.assert_array_equal(host(top[0].data), data[rows])
        np.testing.assert_array_equal(host(top[1].data).ravel(), labels[rows])
    assert top[1].shape == (2, 1, 1, 1)  # Caffe's Forward reshapes the label top to 4 axes


def test_reset_keeps_references_and_restarts_at_the_first_row():
    layer = memory_layer(np)
    top = blobs(2)
    layer.setup([], top)
    data, labels = arrays(4)
    layer.reset(data, labels)
    layer.forward([], top)
    data[2:] = -1  # written after reset: seen by the next forward, as Caffe shares the pointer
    layer.forward([], top)
    np.testing.assert_array_equal(top[0].data, -np.ones((2, 1, 2, 3)))
    other = arrays(2)
    layer.reset(*other)
    layer.forward([], top)
    np.testing.assert_array_equal(top[0].data, other[0])


def test_pycaffe_set_input_arrays(tmp_path):
    (tmp_path / "net.prototxt").write_text(
        'layer { name: "mem" type: "MemoryData" top: "data" top: "label" '
        "memory_data_param { batch_size: 3 channels: 1 height: 2 width: 3 } }"
    )
    net = engine.Net(str(tmp_path / "net.prototxt"), engine.TEST)
    data, labels = arrays(6)
    net.set_input_arrays(data, labels)
    net.forward()
    net.forward()
    np.testing.assert_array_equal(net.blobs["data"].data, data[3:])
    np.testing.assert_array_equal(net.blobs["label"].data.ravel(), labels[3:])


@pytest.mark.parametrize(
    ("data", "labels", "message"),
    [
        (np.zeros((5, 1, 2, 3), np.float32), np.zeros(5, np.float32), "multiple of batch size 2"),
        (np.zeros((4, 1, 2, 3), np.float64), np.zeros(4, np.float32), "data array must be float32"),
        (np.zeros((4, 1, 3, 2), np.float32), np.zeros(4, np.float32), r"data array must be N x 1 x 2 x 3"),
        (np.zeros((4, 1, 2, 3), np.float32)[:, :, :, ::-1], np.zeros(4, np.float32), "must be C contiguous"),
        (np.zeros((4, 1, 2, 3), np.float32), np.zeros(2, np.float32), "same first dimension"),
        (np.zeros((4, 1, 2, 3), np.float32), np.zeros(4, np.int64), "labels array must be float32"),
        ([[0.0]], np.zeros(4, np.float32), "must be a numpy ndarray"),
    ],
)
def test_reset_checks_the_arrays_as_pycaffe(data, labels, message):
    layer = memory_layer(np)
    layer.setup([], blobs(2))
    with pytest.raises(LayerSetupError, match=message):
        layer.reset(data, labels)


def test_forward_before_reset_and_bad_parameters():
    layer = memory_layer(np)
    top = blobs(2)
    layer.setup([], top)
    with pytest.raises(LayerSetupError, match="needs to be initialized by calling reset"):
        layer.forward([], top)
    with pytest.raises(LayerSetupError, match="must be specified and positive in memory_data_param"):
        memory_layer(np, shape=(0, 2, 3)).setup([], blobs(2))
    with pytest.raises(LayerSetupError, match="exactly 2 top"):
        memory_layer(np).setup([], blobs(1))


def test_set_input_arrays_needs_memory_data_first(tmp_path):
    (tmp_path / "net.prototxt").write_text(
        'layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 } } }'
    )
    net = engine.Net(str(tmp_path / "net.prototxt"), engine.TEST)
    with pytest.raises(EngineError, match="first layer is a MemoryDataLayer"):
        net.set_input_arrays(*arrays(2))


def test_set_batch_size_changes_the_batch():
    layer = memory_layer(np)
    top = blobs(2)
    layer.setup([], top)
    layer.reset(*arrays(6))
    layer.set_batch_size(3)
    layer.forward([], top)
    assert top[0].shape == (3, 1, 2, 3)
