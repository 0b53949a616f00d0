"""Dotted field paths into protobuf messages, as the inspector and the commands use them."""

from __future__ import annotations

import pytest

from app.fields import FieldPathError, get_field, set_field
from proto import caffe_pb2


def test_get_defaults_without_creating():
    layer = caffe_pb2.LayerParameter()
    assert get_field(layer, "convolution_param.num_output") == 0
    assert get_field(layer, "convolution_param.bias_term") is True
    assert not layer.HasField("convolution_param")


def test_set_scalars_lists_enums_messages_and_clear():
    layer = caffe_pb2.LayerParameter()
    set_field(layer, "pooling_param.pool", "AVE")
    set_field(layer, "bottom", ["a", "b"])
    set_field(layer, "param.0.lr_mult", 1)
    set_field(layer, "param.1.lr_mult", 2)
    set_field(layer, "convolution_param.weight_filler", caffe_pb2.FillerParameter(type="msra"))
    assert layer.pooling_param.pool == caffe_pb2.PoolingParameter.AVE
    assert list(layer.bottom) == ["a", "b"] and [p.lr_mult for p in layer.param] == [1, 2]
    assert get_field(layer, "param.1.lr_mult") == 2
    assert layer.convolution_param.weight_filler.type == "msra"
    set_field(layer, "pooling_param.pool", None)
    assert not layer.pooling_param.HasField("pool")


@pytest.mark.parametrize(
    "path, value, message",
    [
        ("", 1, "bad field path"),
        ("nope", 1, "no field 'nope'"),
        ("name.x", 1, "not a message field"),
        ("param.lr_mult", 1, "give an index"),
        ("param.3.lr_mult", 1, "past the end"),
        ("bottom", "a", "give a list"),
        ("loss_weight", ["x"], "loss_weight"),
    ],
)
def test_errors_name_the_problem(path, value, message):
    with pytest.raises(FieldPathError, match=message):
        set_field(caffe_pb2.LayerParameter(), path, value)
