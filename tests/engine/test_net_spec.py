"""pycaffe's net_spec driven as pycaffe scripts drive it: `import engine as caffe`, `caffe.layers as L`."""

from __future__ import annotations

import re

import numpy as np
import pytest
from google.protobuf import text_format

import engine as caffe
from engine import layers as L
from engine import params as P
from engine.pycaffe.net_spec import param_name_dict
from proto import caffe_pb2

LENET_LAYERS = """
layer { name: "data" type: "DummyData" top: "data" top: "label"
        transform_param { scale: 0.00392156886 }
        dummy_data_param { shape { dim: 2 dim: 1 dim: 28 dim: 28 } shape { dim: 2 dim: 1 dim: 1 dim: 1 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 20 kernel_size: 5 weight_filler { type: "xavier" } } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
        convolution_param { num_output: 50 kernel_size: 5 weight_filler { type: "xavier" } } }
layer { name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool2" top: "ip1"
        inner_product_param { num_output: 500 weight_filler { type: "xavier" } } }
layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
        inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
"""

# The same net with every name generated: TypeN, counted per type; the in-place ReLU's layer is ReLU1.
ANON_LENET_LAYERS = """
layer { name: "DummyData1" type: "DummyData" top: "DummyData1" top: "DummyData2"
        transform_param { scale: 0.00392156886 }
        dummy_data_param { shape { dim: 2 dim: 1 dim: 28 dim: 28 } shape { dim: 2 dim: 1 dim: 1 dim: 1 } } }
layer { name: "Convolution1" type: "Convolution" bottom: "DummyData1" top: "Convolution1"
        convolution_param { num_output: 20 kernel_size: 5 weight_filler { type: "xavier" } } }
layer { name: "Pooling1" type: "Pooling" bottom: "Convolution1" top: "Pooling1"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "Convolution2" type: "Convolution" bottom: "Pooling1" top: "Convolution2"
        convolution_param { num_output: 50 kernel_size: 5 weight_filler { type: "xavier" } } }
layer { name: "Pooling2" type: "Pooling" bottom: "Convolution2" top: "Pooling2"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "InnerProduct1" type: "InnerProduct" bottom: "Pooling2" top: "InnerProduct1"
        inner_product_param { num_output: 500 weight_filler { type: "xavier" } } }
layer { name: "ReLU1" type: "ReLU" bottom: "InnerProduct1" top: "InnerProduct1" }
layer { name: "InnerProduct2" type: "InnerProduct" bottom: "InnerProduct1" top: "InnerProduct2"
        inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
layer { name: "SoftmaxWithLoss1" type: "SoftmaxWithLoss" bottom: "InnerProduct2" bottom: "DummyData2"
        top: "SoftmaxWithLoss1" }
"""


def parse(text: str) -> caffe_pb2.NetParameter:
    return text_format.Parse(text, caffe_pb2.NetParameter())


def dummy(batch):
    return L.DummyData(
        shape=[dict(dim=[batch, 1, 28, 28]), dict(dim=[batch, 1, 1, 1])],
        transform_param=dict(scale=1.0 / 255),
        ntop=2,
    )


def lenet(batch):
    n = caffe.NetSpec()
    n.data, n.label = dummy(batch)
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20, weight_filler=dict(type="xavier"))
    n.pool1 = L.Pooling(n.conv1, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.conv2 = L.Convolution(n.pool1, kernel_size=5, num_output=50, weight_filler=dict(type="xavier"))
    n.pool2 = L.Pooling(n.conv2, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.ip1 = L.InnerProduct(n.pool2, num_output=500, weight_filler=dict(type="xavier"))
    n.relu1 = L.ReLU(n.ip1, in_place=True)
    n.ip2 = L.InnerProduct(n.relu1, num_output=10, weight_filler=dict(type="xavier"))
    n.loss = L.SoftmaxWithLoss(n.ip2, n.label)
    return n.to_proto()


def anon_lenet(batch):
    data, label = dummy(batch)
    conv1 = L.Convolution(data, kernel_size=5, num_output=20, weight_filler=dict(type="xavier"))
    pool1 = L.Pooling(conv1, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    conv2 = L.Convolution(pool1, kernel_size=5, num_output=50, weight_filler=dict(type="xavier"))
    pool2 = L.Pooling(conv2, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    ip1 = L.InnerProduct(pool2, num_output=500, weight_filler=dict(type="xavier"))
    relu1 = L.ReLU(ip1, in_place=True)
    ip2 = L.InnerProduct(relu1, num_output=10, weight_filler=dict(type="xavier"))
    return L.SoftmaxWithLoss(ip2, label).to_proto()


def load_net(net_param, tmp_path):
    # as pycaffe's own test does: the text of the NetParameter, written to a file, opened by Net
    path = tmp_path / "spec.prototxt"
    path.write_text(str(net_param))
    return caffe.Net(str(path), caffe.TEST)


LENET_SHAPES = {
    "conv1": (2, 20, 24, 24),
    "pool1": (2, 20, 12, 12),
    "conv2": (2, 50, 8, 8),
    "pool2": (2, 50, 4, 4),
    "ip1": (2, 500),
    "ip2": (2, 10),
}


def test_lenet_text_and_built_net(tmp_path):
    proto = lenet(2)
    assert proto == parse(LENET_LAYERS)
    assert proto.layer[6].bottom == proto.layer[6].top  # the ReLU is in place
    net = load_net(proto, tmp_path)
    assert len(net.layers) == 9
    assert net.blobs["data"].data.shape == (2, 1, 28, 28)
    assert net.blobs["label"].data.shape == (2, 1, 1, 1)
    for name, shape in LENET_SHAPES.items():
        assert net.blobs[name].data.shape == shape, name
    assert net.blobs["loss"].data.shape == ()
    assert net.outputs == ["loss"]


def test_anonymous_lenet_names_every_top_by_type(tmp_path):
    proto = anon_lenet(2)
    assert proto == parse(ANON_LENET_LAYERS)
    net = load_net(proto, tmp_path)
    assert len(net.layers) == 9
    assert net.blobs["Convolution2"].data.shape == LENET_SHAPES["conv2"]
    assert net.blobs["InnerProduct1"].data.shape == LENET_SHAPES["ip1"]


def test_zero_tops_returns_the_function_and_names_the_layer(tmp_path):
    n = caffe.NetSpec()
    n.data, n.data2 = L.DummyData(shape=dict(dim=3), ntop=2)
    n.silence_data = L.Silence(n.data, ntop=0)
    n.silence_data2 = L.Silence(n.data2, ntop=0)
    proto = n.to_proto()
    assert [layer.name for layer in proto.layer] == ["data", "silence_data", "silence_data2"]
    assert [list(layer.top) for layer in proto.layer] == [["data", "data2"], [], []]
    assert len(load_net(proto, tmp_path).forward()) == 0
    # unnamed top-less layers count with their type like any other
    anon = caffe.to_proto(L.Silence(*L.DummyData(shape=dict(dim=3), ntop=2), ntop=0))
    assert [layer.name for layer in anon.layer] == ["DummyData1", "Silence1"]


def test_input_that_is_not_a_top_is_a_type_error():
    data = L.DummyData(ntop=2)
    pattern = r"^Silence input 0 is not a Top \(type is <(type|class) 'tuple'>\)$"
    with pytest.raises(TypeError, match=pattern):
        L.Silence(data, ntop=0)
    L.Silence(*data, ntop=0)
    with pytest.raises(TypeError, match=r"^ReLU input 1 is not a Top"):
        L.ReLU(data[0], "conv1")


def test_keywords_route_to_type_param_or_layer():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 2, 5, 5]))
    n.conv = L.Convolution(
        n.data,
        num_output=4,
        kernel_size=[3, 1],  # a repeated field from a list
        pad=1,  # ... and from a single value
        bias_filler=dict(type="constant", value=0.5),  # a nested message from a dict
        param=[dict(lr_mult=1), dict(lr_mult=2, decay_mult=0)],  # repeated messages from dicts
        include=dict(phase=caffe.TEST),  # a LayerParameter field: not in convolution_param
        loss_weight=0.5,
        name="custom",  # the layer's name, the top keeps its own
    )
    n.up = L.Deconvolution(n.conv, convolution_param=dict(num_output=2, kernel_size=2, stride=2))
    layer, deconv = n.to_proto().layer[1:]
    want = parse("""
        layer { name: "custom" type: "Convolution" bottom: "data" top: "conv" loss_weight: 0.5
                param { lr_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
                include { phase: TEST }
                convolution_param { num_output: 4 kernel_size: 3 kernel_size: 1 pad: 1
                                    bias_filler { type: "constant" value: 0.5 } } }
        layer { name: "up" type: "Deconvolution" bottom: "conv" top: "up"
                convolution_param { num_output: 2 kernel_size: 2 stride: 2 } }
    """)
    assert layer == want.layer[0]
    assert deconv == want.layer[1]


def test_python_layer_and_string_fields():
    top = L.Python(L.Input(shape=dict(dim=[2])), module="my_layers", layer="Double", param_str="{'k': 2}")
    layer = caffe.to_proto(top).layer[1]
    assert layer.type == "Python" and list(layer.bottom) == ["Input1"] and list(layer.top) == ["Python1"]
    assert (layer.python_param.module, layer.python_param.layer) == ("my_layers", "Double")
    assert layer.python_param.param_str == "{'k': 2}"


def test_multi_top_naming_and_shared_ancestors():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[2, 6]))
    a, b, c = L.Slice(n.data, slice_point=[1, 3], ntop=3)
    n.second = b  # only the second top named: the others take TypeN, the layer the first top's name
    n.sum = L.Eltwise(a, c)
    proto = n.to_proto()
    slice_layer = proto.layer[1]
    assert list(slice_layer.top) == ["Slice1", "second", "Slice2"]
    assert slice_layer.name == "Slice1"
    assert list(proto.layer[2].bottom) == ["Slice1", "Slice2"]
    # two anonymous outputs that share a layer: it is emitted once
    shared = L.Input(shape=dict(dim=[1, 3]))
    proto = caffe.to_proto(L.ReLU(shared), L.Sigmoid(shared))
    assert [layer.type for layer in proto.layer] == ["Input", "ReLU", "Sigmoid"]
    assert list(proto.layer[2].bottom) == ["Input1"]


def test_layers_come_out_in_dependency_order():
    n = caffe.NetSpec()
    data = L.Input(shape=dict(dim=[1, 1, 4, 4]))
    n.out = L.ReLU(L.Pooling(data, kernel_size=2, stride=2))
    n.data = data  # named after its consumer: still emitted first, with its NetSpec name
    proto = n.to_proto()
    assert [(layer.name, list(layer.bottom), list(layer.top)) for layer in proto.layer] == [
        ("data", [], ["data"]),
        ("Pooling1", ["data"], ["Pooling1"]),
        ("out", ["Pooling1"], ["out"]),
    ]


def test_netspec_item_access_and_missing_tops():
    n = caffe.NetSpec()
    n["data"] = L.Input(shape=dict(dim=[1]))
    assert n["data"] is n.data and "data" in n and n.keys() == ["data"]
    with pytest.raises(KeyError):
        n["nope"]
    with pytest.raises(AttributeError):
        _ = n.nope
    assert not hasattr(n, "nope")


def test_params_are_the_schema_constants():
    assert P.Pooling.MAX == caffe_pb2.PoolingParameter.MAX
    assert P.Pooling.AVE == caffe_pb2.PoolingParameter.AVE
    assert P.Eltwise.PROD == caffe_pb2.EltwiseParameter.PROD
    assert caffe.params.Convolution.CAFFE == caffe_pb2.ConvolutionParameter.CAFFE
    with pytest.raises(AttributeError, match="NoSuchParameter"):
        _ = P.NoSuch.MAX
    with pytest.raises(AttributeError, match="PoolingParameter has no constant 'MEDIAN'"):
        _ = P.Pooling.MEDIAN


def test_param_name_dict_follows_the_schema():
    names = param_name_dict()
    assert names["Convolution"] == "convolution"
    assert names["InnerProduct"] == "inner_product"
    assert names["HDF5Data"] == "hdf5_data"
    assert names["Transformation"] == "transform"
    assert names["ReLU"] == "relu" and names["TanH"] == "tanh" and names["PReLU"] == "prelu"
    assert "Deconvolution" not in names and "SoftmaxWithLoss" not in names


@pytest.mark.parametrize(
    "make, error, message",
    [
        (
            lambda: L.Convolution(L.Input(), kernal_size=3),
            AttributeError,
            "Convolution layer 'Convolution1': 'kernal_size'",
        ),
        (lambda: L.Deconvolution(L.Input(), num_output=2), AttributeError, "no \\*_param of its own name"),
        (lambda: L.Convolution(L.Input(), weight_filler="xavier"), TypeError, "give it as a dict"),
        (lambda: L.Convolution(L.Input(), num_output=dict(a=1)), TypeError, "not a message"),
        (
            lambda: L.Convolution(L.Input(), weight_filler=dict(typo=1)),
            AttributeError,
            "FillerParameter has no field",
        ),
        (lambda: L.ReLU(L.Input(), negative_slope="steep"), TypeError, "negative_slope"),
    ],
)
def test_bad_keywords_fail_clearly_on_to_proto(make, error, message):
    with pytest.raises(error, match=message):
        make().to_proto()


def test_bad_spec_values():
    with pytest.raises(ValueError, match="ntop must be a non-negative integer"):
        L.Input(ntop=-1)
    n = caffe.NetSpec()
    n.pair = L.Input(ntop=2)  # a tuple of tops under one name
    with pytest.raises(TypeError, match="NetSpec top 'pair' is a tuple of 2 tops"):
        n.to_proto()


def test_layers_package_keeps_its_own_names():
    import engine.layers
    from engine.layers import create_layer, layer_class

    assert caffe.layers is engine.layers
    assert layer_class("ReLU").type == "ReLU" and callable(create_layer)
    assert engine.layers.conv.__name__ == "engine.layers.conv"  # submodules are still attributes
    assert not hasattr(L, "no_such_module")  # lower-case misses stay AttributeErrors
    with pytest.raises(AttributeError):
        L.__wrapped__  # noqa: B018
    assert isinstance(L.Convolution(L.Input(shape=dict(dim=[1]))), caffe.net_spec.Top)


def test_engine_proto_is_the_proto_package():
    import engine.proto
    from engine.proto import caffe_pb2 as pb2

    import proto

    assert engine.proto is proto and pb2 is caffe_pb2
    assert caffe.proto.caffe_pb2.BlobProto is caffe_pb2.BlobProto


def test_text_of_top_level_to_proto_is_reparsable():
    text = str(anon_lenet(3))
    assert re.search(r'name: "ReLU1"', text)
    assert parse(text) == anon_lenet(3)


def test_numpy_values_and_tuples_are_accepted():
    top = L.Convolution(
        L.Input(), num_output=np.int64(4), kernel_size=np.array([3, 5]), pad=np.array(1), stride=(1, 2)
    )
    conv = caffe.to_proto(top).layer[1].convolution_param
    assert conv.num_output == 4 and list(conv.kernel_size) == [3, 5]
    assert list(conv.pad) == [1] and list(conv.stride) == [1, 2]
