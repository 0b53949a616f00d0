"""InsertSplits cases: each rule of Caffe's insert_splits.cpp on a small net."""

from __future__ import annotations

import pytest
from google.protobuf import text_format

from engine.errors import NetError
from engine.insert_splits import insert_splits
from proto import caffe_pb2


def net(text: str) -> caffe_pb2.NetParameter:
    return text_format.Parse(text, caffe_pb2.NetParameter())


def layer_names(param: caffe_pb2.NetParameter) -> list[str]:
    return [layer.name for layer in param.layer]


def by_name(param: caffe_pb2.NetParameter, name: str) -> caffe_pb2.LayerParameter:
    return next(layer for layer in param.layer if layer.name == name)


def test_blob_used_twice_by_one_layer_gets_a_split():
    param = net("""
        layer { name: "data" type: "Input" top: "data" }
        layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" }
        layer { name: "relu" type: "ReLU" bottom: "ip" top: "ip" }
        layer { name: "loss" type: "EuclideanLoss" bottom: "ip" bottom: "ip" top: "loss" }
    """)
    out = insert_splits(param)
    assert layer_names(out) == ["data", "ip", "relu", "ip_relu_0_split", "loss"]
    assert list(by_name(out, "loss").bottom) == ["ip_relu_0_split_0", "ip_relu_0_split_1"]
    assert list(by_name(out, "relu").bottom) == ["ip"]


def test_no_split_for_single_consumers_and_in_place_chains():
    param = net("""
        layer { name: "data" type: "Input" top: "data" }
        layer { name: "conv" type: "Convolution" bottom: "data" top: "conv" }
        layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
        layer { name: "drop" type: "Dropout" bottom: "conv" top: "conv" }
        layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip" }
    """)
    assert insert_splits(param) == param


def test_one_blob_feeding_three_layers_in_layer_order():
    param = net("""
        layer { name: "data" type: "Input" top: "data" top: "label" }
        layer { name: "a" type: "InnerProduct" bottom: "data" top: "a" }
        layer { name: "b" type: "InnerProduct" bottom: "data" top: "b" }
        layer { name: "c" type: "Concat" bottom: "a" bottom: "data" bottom: "b" top: "c" }
    """)
    out = insert_splits(param)
    assert layer_names(out) == ["data", "data_data_0_split", "a", "b", "c"]
    split = by_name(out, "data_data_0_split")
    assert split.type == "Split"
    assert list(split.bottom) == ["data"]
    assert list(split.top) == [f"data_data_0_split_{k}" for k in range(3)]
    assert list(by_name(out, "a").bottom) == ["data_data_0_split_0"]
    assert list(by_name(out, "b").bottom) == ["data_data_0_split_1"]
    assert list(by_name(out, "c").bottom) == ["a", "data_data_0_split_2", "b"]
    assert not split.loss_weight


def test_top_index_in_names_and_second_top():
    param = net("""
        layer { name: "input" type: "Input" top: "x" top: "y" }
        layer { name: "p" type: "Eltwise" bottom: "y" bottom: "y" top: "p" }
    """)
    out = insert_splits(param)
    assert layer_names(out) == ["input", "y_input_1_split", "p"]
    assert list(by_name(out, "p").bottom) == ["y_input_1_split_0", "y_input_1_split_1"]


def test_loss_weight_counts_as_a_use_and_moves_to_the_split():
    param = net("""
        layer { name: "data" type: "Input" top: "data" }
        layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" loss_weight: 2.5 }
        layer { name: "other" type: "ReLU" bottom: "ip" top: "other" }
    """)
    out = insert_splits(param)
    assert layer_names(out) == ["data", "ip", "ip_ip_0_split", "other"]
    assert not by_name(out, "ip").loss_weight
    split = by_name(out, "ip_ip_0_split")
    assert list(split.top) == ["ip_ip_0_split_0", "ip_ip_0_split_1"]
    assert list(split.loss_weight) == [2.5, 0.0]
    assert list(by_name(out, "other").bottom) == ["ip_ip_0_split_1"]


def test_zero_loss_weight_is_not_a_use():
    param = net("""
        layer { name: "data" type: "Input" top: "data" }
        layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" loss_weight: 0 }
        layer { name: "other" type: "ReLU" bottom: "ip" top: "other" }
    """)
    assert insert_splits(param) == param


def test_split_after_in_place_layer_is_named_for_the_last_producer():
    param = net("""
        layer { name: "data" type: "Input" top: "data" }
        layer { name: "conv" type: "Convolution" bottom: "data" top: "conv" }
        layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
        layer { name: "a" type: "Pooling" bottom: "conv" top: "a" }
        layer { name: "b" type: "Pooling" bottom: "conv" top: "b" }
    """)
    out = insert_splits(param)
    assert layer_names(out) == ["data", "conv", "relu", "conv_relu_0_split", "a", "b"]
    assert list(by_name(out, "relu").bottom) == ["conv"]
    assert list(by_name(out, "a").bottom) == ["conv_relu_0_split_0"]


def test_blob_redefined_after_use_splits_each_version_separately():
    param = net("""
        layer { name: "d" type: "Input" top: "x" }
        layer { name: "u1" type: "ReLU" bottom: "x" top: "u1" }
        layer { name: "u2" type: "ReLU" bottom: "x" top: "u2" }
        layer { name: "f" type: "ReLU" bottom: "u1" top: "x" }
        layer { name: "u3" type: "ReLU" bottom: "x" top: "u3" }
    """)
    out = insert_splits(param)
    assert layer_names(out) == ["d", "x_d_0_split", "u1", "u2", "f", "u3"]
    assert list(by_name(out, "u3").bottom) == ["x"]


def test_unknown_bottom_is_an_error_naming_layer_and_index():
    param = net("""
        layer { name: "data" type: "Input" top: "data" }
        layer { name: "ip" type: "InnerProduct" bottom: "data" bottom: "nope" top: "ip" }
    """)
    with pytest.raises(NetError, match=r"Unknown bottom blob 'nope' \(layer 'ip', bottom index 1\)"):
        insert_splits(param)


def test_input_is_not_modified():
    param = net("""
        layer { name: "data" type: "Input" top: "data" }
        layer { name: "a" type: "ReLU" bottom: "data" top: "a" }
        layer { name: "b" type: "ReLU" bottom: "data" top: "b" }
    """)
    before = param.SerializeToString()
    insert_splits(param)
    assert param.SerializeToString() == before
