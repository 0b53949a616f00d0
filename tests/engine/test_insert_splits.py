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


# --- Caffe's SplitLayerInsertionTest cases (test_split_layer.cpp), in the current layer syntax --------


def check_insertion(given: str, expected: str) -> None:
    """InsertSplits turns ``given`` into ``expected``, and is idempotent on its own output."""
    out = insert_splits(net(given))
    assert text_format.MessageToString(out) == text_format.MessageToString(net(expected))
    assert insert_splits(out) == out


DATA = "layer { name: 'data' type: 'Data' top: 'data' top: 'label' }"


def test_caffe_no_insertion():
    check_insertion(
        given := f"""name: 'TestNetwork' {DATA}
        layer {{ name: 'innerprod' type: 'InnerProduct' bottom: 'data' top: 'innerprod' }}
        layer {{ name: 'loss' type: 'SoftmaxWithLoss' bottom: 'innerprod' bottom: 'label' }}""",
        given,
    )


def test_caffe_no_insertion_with_an_explicit_split():
    check_insertion(
        given := f"""name: 'TestNetwork' {DATA}
        layer {{ name: 'data_split' type: 'Split' bottom: 'data' top: 'data_split_0' top: 'data_split_1' }}
        layer {{ name: 'innerprod1' type: 'InnerProduct' bottom: 'data_split_0' top: 'innerprod1' }}
        layer {{ name: 'innerprod2' type: 'InnerProduct' bottom: 'data_split_1' top: 'innerprod2' }}
        layer {{ name: 'loss' type: 'EuclideanLoss' bottom: 'innerprod1' bottom: 'innerprod2' }}""",
        given,
    )


def test_caffe_no_insertion_with_in_place():
    check_insertion(
        given := f"""name: 'TestNetwork' {DATA}
        layer {{ name: 'innerprod' type: 'InnerProduct' bottom: 'data' top: 'innerprod' }}
        layer {{ name: 'relu' type: 'ReLU' bottom: 'innerprod' top: 'innerprod' }}
        layer {{ name: 'loss' type: 'SoftmaxWithLoss' bottom: 'innerprod' bottom: 'label' }}""",
        given,
    )


def test_caffe_loss_insertion():
    ip1 = "name: 'innerproduct1' type: 'InnerProduct' param { name: 'unsharedweights1' }"
    ip2 = "name: 'innerproduct2' type: 'InnerProduct' param { name: 'unsharedweights2' }"
    check_insertion(
        f"""name: 'UnsharedWeightsNetwork' force_backward: true
        layer {{ name: 'data' type: 'DummyData' top: 'data' }}
        layer {{ {ip1} bottom: 'data' top: 'innerproduct1' loss_weight: 2.5 }}
        layer {{ {ip2} bottom: 'data' top: 'innerproduct2' }}
        layer {{ name: 'loss' type: 'EuclideanLoss' bottom: 'innerproduct1' bottom: 'innerproduct2' }}""",
        f"""name: 'UnsharedWeightsNetwork' force_backward: true
        layer {{ name: 'data' type: 'DummyData' top: 'data' }}
        layer {{ name: 'data_data_0_split' type: 'Split' bottom: 'data'
                top: 'data_data_0_split_0' top: 'data_data_0_split_1' }}
        layer {{ {ip1} bottom: 'data_data_0_split_0' top: 'innerproduct1' }}
        layer {{ name: 'innerproduct1_innerproduct1_0_split' type: 'Split' bottom: 'innerproduct1'
                top: 'innerproduct1_innerproduct1_0_split_0' top: 'innerproduct1_innerproduct1_0_split_1'
                loss_weight: 2.5 loss_weight: 0 }}
        layer {{ {ip2} bottom: 'data_data_0_split_1' top: 'innerproduct2' }}
        layer {{ name: 'loss' type: 'EuclideanLoss'
                bottom: 'innerproduct1_innerproduct1_0_split_1' bottom: 'innerproduct2' }}""",
    )


def test_caffe_insertion():
    check_insertion(
        f"""name: 'TestNetwork' {DATA}
        layer {{ name: 'innerprod1' type: 'InnerProduct' bottom: 'data' top: 'innerprod1' }}
        layer {{ name: 'innerprod2' type: 'InnerProduct' bottom: 'data' top: 'innerprod2' }}
        layer {{ name: 'innerprod3' type: 'InnerProduct' bottom: 'data' top: 'innerprod3' }}
        layer {{ name: 'loss1' type: 'EuclideanLoss' bottom: 'innerprod1' bottom: 'innerprod2' }}
        layer {{ name: 'loss2' type: 'EuclideanLoss' bottom: 'innerprod2' bottom: 'innerprod3' }}""",
        f"""name: 'TestNetwork' {DATA}
        layer {{ name: 'data_data_0_split' type: 'Split' bottom: 'data'
                top: 'data_data_0_split_0' top: 'data_data_0_split_1' top: 'data_data_0_split_2' }}
        layer {{ name: 'innerprod1' type: 'InnerProduct' bottom: 'data_data_0_split_0' top: 'innerprod1' }}
        layer {{ name: 'innerprod2' type: 'InnerProduct' bottom: 'data_data_0_split_1' top: 'innerprod2' }}
        layer {{ name: 'innerprod2_innerprod2_0_split' type: 'Split' bottom: 'innerprod2'
                top: 'innerprod2_innerprod2_0_split_0' top: 'innerprod2_innerprod2_0_split_1' }}
        layer {{ name: 'innerprod3' type: 'InnerProduct' bottom: 'data_data_0_split_2' top: 'innerprod3' }}
        layer {{ name: 'loss1' type: 'EuclideanLoss'
                bottom: 'innerprod1' bottom: 'innerprod2_innerprod2_0_split_0' }}
        layer {{ name: 'loss2' type: 'EuclideanLoss'
                bottom: 'innerprod2_innerprod2_0_split_1' bottom: 'innerprod3' }}""",
    )


def test_caffe_insertion_two_top():
    check_insertion(
        f"""name: 'TestNetwork' {DATA}
        layer {{ name: 'innerprod1' type: 'InnerProduct' bottom: 'data' top: 'innerprod1' }}
        layer {{ name: 'innerprod2' type: 'InnerProduct' bottom: 'label' top: 'innerprod2' }}
        layer {{ name: 'innerprod3' type: 'InnerProduct' bottom: 'data' top: 'innerprod3' }}
        layer {{ name: 'innerprod4' type: 'InnerProduct' bottom: 'label' top: 'innerprod4' }}
        layer {{ name: 'loss1' type: 'EuclideanLoss' bottom: 'innerprod1' bottom: 'innerprod3' }}
        layer {{ name: 'loss2' type: 'EuclideanLoss' bottom: 'innerprod2' bottom: 'innerprod4' }}""",
        f"""name: 'TestNetwork' {DATA}
        layer {{ name: 'data_data_0_split' type: 'Split' bottom: 'data'
                top: 'data_data_0_split_0' top: 'data_data_0_split_1' }}
        layer {{ name: 'label_data_1_split' type: 'Split' bottom: 'label'
                top: 'label_data_1_split_0' top: 'label_data_1_split_1' }}
        layer {{ name: 'innerprod1' type: 'InnerProduct' bottom: 'data_data_0_split_0' top: 'innerprod1' }}
        layer {{ name: 'innerprod2' type: 'InnerProduct' bottom: 'label_data_1_split_0' top: 'innerprod2' }}
        layer {{ name: 'innerprod3' type: 'InnerProduct' bottom: 'data_data_0_split_1' top: 'innerprod3' }}
        layer {{ name: 'innerprod4' type: 'InnerProduct' bottom: 'label_data_1_split_1' top: 'innerprod4' }}
        layer {{ name: 'loss1' type: 'EuclideanLoss' bottom: 'innerprod1' bottom: 'innerprod3' }}
        layer {{ name: 'loss2' type: 'EuclideanLoss' bottom: 'innerprod2' bottom: 'innerprod4' }}""",
    )


def test_caffe_input_insertion():
    inputs = "name: 'TestNetwork' input: 'data' input_dim: 10 input_dim: 3 input_dim: 227 input_dim: 227"
    check_insertion(
        f"""{inputs}
        layer {{ name: 'innerprod1' type: 'InnerProduct' bottom: 'data' top: 'innerprod1' }}
        layer {{ name: 'innerprod2' type: 'InnerProduct' bottom: 'data' top: 'innerprod2' }}
        layer {{ name: 'loss' type: 'EuclideanLoss' bottom: 'innerprod1' bottom: 'innerprod2' }}""",
        f"""{inputs}
        layer {{ name: 'data_input_0_split' type: 'Split' bottom: 'data'
                top: 'data_input_0_split_0' top: 'data_input_0_split_1' }}
        layer {{ name: 'innerprod1' type: 'InnerProduct' bottom: 'data_input_0_split_0' top: 'innerprod1' }}
        layer {{ name: 'innerprod2' type: 'InnerProduct' bottom: 'data_input_0_split_1' top: 'innerprod2' }}
        layer {{ name: 'loss' type: 'EuclideanLoss' bottom: 'innerprod1' bottom: 'innerprod2' }}""",
    )


def test_caffe_with_in_place():
    check_insertion(
        f"""name: 'TestNetwork' {DATA}
        layer {{ name: 'innerprod1' type: 'InnerProduct' bottom: 'data' top: 'innerprod1' }}
        layer {{ name: 'relu1' type: 'ReLU' bottom: 'innerprod1' top: 'innerprod1' }}
        layer {{ name: 'innerprod2' type: 'InnerProduct' bottom: 'innerprod1' top: 'innerprod2' }}
        layer {{ name: 'loss1' type: 'EuclideanLoss' bottom: 'innerprod1' bottom: 'label' }}
        layer {{ name: 'loss2' type: 'EuclideanLoss' bottom: 'innerprod2' bottom: 'data' }}""",
        f"""name: 'TestNetwork' {DATA}
        layer {{ name: 'data_data_0_split' type: 'Split' bottom: 'data'
                top: 'data_data_0_split_0' top: 'data_data_0_split_1' }}
        layer {{ name: 'innerprod1' type: 'InnerProduct' bottom: 'data_data_0_split_0' top: 'innerprod1' }}
        layer {{ name: 'relu1' type: 'ReLU' bottom: 'innerprod1' top: 'innerprod1' }}
        layer {{ name: 'innerprod1_relu1_0_split' type: 'Split' bottom: 'innerprod1'
                top: 'innerprod1_relu1_0_split_0' top: 'innerprod1_relu1_0_split_1' }}
        layer {{ name: 'innerprod2' type: 'InnerProduct'
                bottom: 'innerprod1_relu1_0_split_0' top: 'innerprod2' }}
        layer {{ name: 'loss1' type: 'EuclideanLoss' bottom: 'innerprod1_relu1_0_split_1' bottom: 'label' }}
        layer {{ name: 'loss2' type: 'EuclideanLoss' bottom: 'innerprod2' bottom: 'data_data_0_split_1' }}""",
    )


def test_a_loss_weight_clears_every_loss_weight_of_its_producer():
    # Caffe clears the producer's whole loss_weight list once one of its tops gets a weighted split
    out = insert_splits(
        net("""
        layer { name: 'in' type: 'Input' top: 'a' top: 'b' }
        layer { name: 'two' type: 'Slice' bottom: 'a' top: 'p' top: 'q' loss_weight: 1 loss_weight: 3 }
        layer { name: 'use' type: 'ReLU' bottom: 'p' top: 'r' }
    """)
    )
    assert layer_names(out) == ["in", "two", "p_two_0_split", "use"]
    assert not by_name(out, "two").loss_weight
    assert list(by_name(out, "p_two_0_split").loss_weight) == [1.0, 0.0]
