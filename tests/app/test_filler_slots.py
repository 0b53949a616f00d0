"""Which blobs a layer learns, which filler field fills each, and what each filler reads (Qt-free)."""

from __future__ import annotations

import numpy as np
import pytest

from app.fillers.slots import FIELDS, describe, effective, is_set, slots, with_field, with_type
from engine.fillers import filler_types
from engine.net import Net
from proto import caffe_pb2, textio

NET = """
name: "every_learner"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 dim: 8 dim: 8 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "conv_nb" type: "Convolution" bottom: "conv" top: "conv_nb"
        convolution_param { num_output: 4 kernel_size: 1 bias_term: false } }
layer { name: "prelu" type: "PReLU" bottom: "conv_nb" top: "conv_nb" }
layer { name: "scale" type: "Scale" bottom: "conv_nb" top: "scaled" scale_param { bias_term: true } }
layer { name: "bias" type: "Bias" bottom: "scaled" top: "biased" }
layer { name: "bn" type: "BatchNorm" bottom: "biased" top: "bn" }
layer { name: "up" type: "Deconvolution" bottom: "bn" top: "up"
        convolution_param { num_output: 4 group: 4 kernel_size: 4 stride: 2 bias_term: false
                            weight_filler { type: "bilinear" } } }
layer { name: "ip" type: "InnerProduct" bottom: "up" top: "ip" inner_product_param { num_output: 5 } }
layer { name: "relu" type: "ReLU" bottom: "ip" top: "ip" }
"""


@pytest.fixture
def net() -> caffe_pb2.NetParameter:
    return textio.parse_net(NET)


def test_the_panel_knows_exactly_the_engines_fillers():
    assert sorted(FIELDS) == filler_types()


def test_a_slot_per_blob_the_engine_creates(net):
    built = Net(net, phase=caffe_pb2.TRAIN, xp=np)
    for layer in net.layer:
        blobs = built.layers[built.layer_names.index(layer.name)].blobs
        assert len(slots(layer)) == len(blobs), layer.name


def test_roles_and_fields(net):
    by_name = {layer.name: [(s.role, s.path) for s in slots(layer)] for layer in net.layer}
    assert by_name["conv"] == [
        ("weights", "convolution_param.weight_filler"),
        ("bias", "convolution_param.bias_filler"),
    ]
    assert by_name["conv_nb"] == [("weights", "convolution_param.weight_filler")]
    assert by_name["prelu"] == [("slopes", "prelu_param.filler")]
    assert by_name["scale"] == [("scale", "scale_param.filler"), ("bias", "scale_param.bias_filler")]
    assert by_name["bias"] == [("bias", "bias_param.filler")]
    assert [path for _, path in by_name["bn"]] == [None, None, None]
    assert by_name["ip"][0] == ("weights", "inner_product_param.weight_filler")
    assert by_name["relu"] == [] and by_name["data"] == []


def test_scale_with_a_second_bottom_learns_only_its_bias():
    layer = caffe_pb2.LayerParameter(name="s", type="Scale", bottom=["x", "factors"], top=["y"])
    layer.scale_param.bias_term = True
    assert [s.role for s in slots(layer)] == ["bias"]


def test_effective_is_the_engines_default_until_set(net):
    prelu = net.layer[3]
    slot = slots(prelu)[0]
    assert not is_set(prelu, slot)
    assert (effective(prelu, slot).type, effective(prelu, slot).value) == ("constant", pytest.approx(0.25))
    conv = net.layer[1]
    weights, bias = slots(conv)
    assert is_set(conv, weights) and effective(conv, weights).type == "xavier"
    assert not is_set(conv, bias) and effective(conv, bias).type == "constant"


def test_switching_type_keeps_only_the_fields_the_new_filler_reads():
    gaussian = caffe_pb2.FillerParameter(type="gaussian", std=0.01, mean=0.5, sparse=3)
    assert with_type(gaussian, "uniform") == caffe_pb2.FillerParameter(type="uniform")
    xavier = caffe_pb2.FillerParameter(type="xavier", variance_norm=caffe_pb2.FillerParameter.AVERAGE)
    msra = with_type(xavier, "msra")
    assert msra.type == "msra" and msra.variance_norm == caffe_pb2.FillerParameter.AVERAGE
    assert with_field(msra, "variance_norm", 1).variance_norm == caffe_pb2.FillerParameter.FAN_OUT
    assert describe(caffe_pb2.FillerParameter(type="gaussian", std=0.01)) == "gaussian(std=0.01)"
