"""Silence (no tops, zero gradients) and Parameter (a learnable blob exposed as a top)."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format

from engine.errors import LayerSetupError
from engine.net import Net
from engine.testing import blobs, host, make_layer, random_blob
from proto import caffe_pb2


def test_silence_zeroes_only_the_diffs_asked_for(xp):
    layer = make_layer('name: "quiet" type: "Silence" bottom: "a" bottom: "b"', xp)
    bottom = [random_blob((2, 3), xp), random_blob((4,), xp)]
    layer.setup(bottom, [])
    layer.forward(bottom, [])
    for b in bottom:
        b.diff[...] = 5
    layer.backward([], [True, False], bottom)
    np.testing.assert_array_equal(host(bottom[0].diff), np.zeros((2, 3)))
    np.testing.assert_array_equal(host(bottom[1].diff), np.full(4, 5.0))


def test_silence_takes_no_top(xp):
    layer = make_layer('name: "quiet" type: "Silence" bottom: "a" top: "t"', xp)
    with pytest.raises(LayerSetupError, match="exactly 0 top"):
        layer.setup([random_blob((2,), xp)], blobs(1, xp))


def parameter(xp, extra: str = ""):
    text = f'name: "p" type: "Parameter" top: "w" parameter_param {{ shape {{ dim: 2 dim: 3 }} }} {extra}'
    return make_layer(text, xp)


def test_parameter_top_views_the_blob_data_and_diff(xp):
    layer, top = parameter(xp), blobs(1, xp)
    layer.setup([], top)
    assert top[0].shape == (2, 3) and [b.shape for b in layer.blobs] == [(2, 3)]
    np.testing.assert_array_equal(host(layer.blobs[0].data), np.zeros((2, 3)))
    layer.blobs[0].data[...] = xp.asarray(np.arange(6.0).reshape(2, 3))
    layer.forward([], top)
    np.testing.assert_array_equal(host(top[0].data), np.arange(6.0).reshape(2, 3))
    top[0].diff[...] = 4
    layer.backward(top, [], [])
    np.testing.assert_array_equal(host(layer.blobs[0].diff), np.full((2, 3), 4.0))


def test_parameter_keeps_blobs_given_in_the_prototxt(xp):
    values = " ".join(f"data: {v}" for v in range(6))
    layer = parameter(xp, f"blobs {{ shape {{ dim: 2 dim: 3 }} {values} }}")
    top = blobs(1, xp)
    layer.setup([], top)
    np.testing.assert_array_equal(host(top[0].data), np.arange(6.0).reshape(2, 3))


NET = """
name: "learned_bias"
force_backward: true
layer { name: "input" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "bias" type: "Parameter" top: "b" parameter_param { shape { dim: 2 dim: 3 } } }
layer { name: "sum" type: "Eltwise" bottom: "x" bottom: "b" top: "y" loss_weight: 1 }
"""


def test_parameter_in_a_net_learns_from_its_consumers(xp):
    net = Net(text_format.Parse(NET, caffe_pb2.NetParameter()), phase=caffe_pb2.TRAIN, xp=xp)
    assert len(net.learnable_params) == 1
    param = net.learnable_params[0]
    param.data[...] = xp.asarray(np.full((2, 3), 0.5))
    net.blob_by_name("x").data[...] = xp.asarray(np.arange(6.0).reshape(2, 3))
    net.forward()
    np.testing.assert_allclose(host(net.blob_by_name("y").data), np.arange(6.0).reshape(2, 3) + 0.5)
    net.backward()
    np.testing.assert_allclose(host(param.diff), np.ones((2, 3)))  # dE/dy = loss weight 1
