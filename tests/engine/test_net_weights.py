"""Net.copy_trained_layers_from: weights load as Caffe 1.0's Net::CopyTrainedLayersFrom loads them.

Layers match by name; blob counts, shapes (Blob::ShapeEquals, legacy 4-D fields included) and value
counts (Blob::FromProto) are checked with Caffe's words; V0 and V1 caffemodels are upgraded on read;
a caffemodel larger than protobuf's classic 64 MB limit reads like any other.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format

from engine import backend
from engine.errors import NetError
from engine.net import Net
from proto import caffe_pb2
from proto.binaryio import read_caffemodel, write_caffemodel

GOLDEN_IP = "layers/inner_product"

MLP = """
name: "mlp"
layer { name: "input" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc" inner_product_param { num_output: 4 } }
layer { name: "relu" type: "ReLU" bottom: "fc" top: "fc" }
layer { name: "out" type: "InnerProduct" bottom: "fc" top: "out" inner_product_param { num_output: 2 } }
"""

CONV = """
name: "conv"
layer { name: "input" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 dim: 5 dim: 5 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 3 kernel_size: 3 pad: 1 } }
layer { name: "ip" type: "InnerProduct" bottom: "conv1" top: "ip" inner_product_param { num_output: 4 } }
"""


def build(text: str, xp=np, dtype=np.float32) -> Net:
    return Net(text_format.Parse(text, caffe_pb2.NetParameter()), phase=caffe_pb2.TEST, xp=xp, dtype=dtype)


def host(blob) -> np.ndarray:
    return backend.to_host(blob.data)


def blob_proto(values: np.ndarray, shape=None, legacy=None) -> caffe_pb2.BlobProto:
    """A BlobProto holding ``values`` under an N-d ``shape`` or legacy (num, channels, height, width)."""
    proto = caffe_pb2.BlobProto()
    if legacy is not None:
        proto.num, proto.channels, proto.height, proto.width = legacy
    else:
        proto.shape.dim.extend(values.shape if shape is None else shape)
    proto.data.extend(np.asarray(values, np.float32).ravel().tolist())
    return proto


def weights(*layers: tuple[str, str, list[caffe_pb2.BlobProto]]) -> caffe_pb2.NetParameter:
    net = caffe_pb2.NetParameter(name="trained")
    for name, kind, blobs in layers:
        net.layer.add(name=name, type=kind).blobs.extend(blobs)
    return net


RNG = np.random.default_rng(5)
W_FC, B_FC = RNG.normal(size=(4, 3)).astype(np.float32), RNG.normal(size=4).astype(np.float32)
W_OUT, B_OUT = RNG.normal(size=(2, 4)).astype(np.float32), RNG.normal(size=2).astype(np.float32)


def test_layers_match_by_name_and_unknown_ones_are_ignored_with_caffes_log_line(xp, caplog):
    net = build(MLP, xp=xp)
    source = weights(
        ("out", "InnerProduct", [blob_proto(W_OUT), blob_proto(B_OUT)]),  # order does not matter
        ("fc", "InnerProduct", [blob_proto(W_FC), blob_proto(B_FC)]),
        ("fc9_new", "InnerProduct", [blob_proto(np.zeros((7, 7)))]),
        ("relu", "ReLU", []),
    )
    with caplog.at_level(logging.INFO, logger="engine.net"):
        net.copy_trained_layers_from(source)
    assert [r.getMessage() for r in caplog.records if "Ignoring" in r.getMessage()] == [
        "Ignoring source layer fc9_new"
    ]
    fc, out = net.layer_by_name("fc"), net.layer_by_name("out")
    np.testing.assert_array_equal(host(fc.blobs[0]), W_FC)
    np.testing.assert_array_equal(host(fc.blobs[1]), B_FC)
    np.testing.assert_array_equal(host(out.blobs[0]), W_OUT)
    np.testing.assert_array_equal(host(out.blobs[1]), B_OUT)
    # The copied weights are the ones the forward pass uses.
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    net.blob_by_name("data").data[...] = xp.asarray(x)
    net.forward()
    want = np.maximum(x @ W_FC.T + B_FC, 0) @ W_OUT.T + B_OUT
    np.testing.assert_allclose(host(net.blob_by_name("out")), want, rtol=1e-5, atol=1e-6)


def test_blob_count_mismatch_is_caffes_error():
    net = build(MLP)
    with pytest.raises(NetError, match=r"^Incompatible number of blobs for layer fc\b"):
        net.copy_trained_layers_from(weights(("fc", "InnerProduct", [blob_proto(W_FC)])))
    with pytest.raises(NetError, match=r"^Incompatible number of blobs for layer relu\b"):
        net.copy_trained_layers_from(weights(("relu", "PReLU", [blob_proto(np.ones(4))])))


def test_legacy_4d_blobs_match_new_shapes_as_shape_equals_does(xp):
    net = build(CONV, xp=xp)
    w_conv = RNG.normal(size=(3, 2, 3, 3)).astype(np.float32)
    w_ip = RNG.normal(size=(4, 75)).astype(np.float32)
    b_conv, b_ip = np.arange(3, dtype=np.float32), np.arange(4, dtype=np.float32) + 10
    conv_blobs = [blob_proto(w_conv, legacy=(3, 2, 3, 3)), blob_proto(b_conv, legacy=(1, 1, 1, 3))]
    ip_blobs = [blob_proto(w_ip, legacy=(1, 1, 4, 75)), blob_proto(b_ip, legacy=(1, 1, 1, 4))]
    legacy = weights(("conv1", "Convolution", conv_blobs), ("ip", "InnerProduct", ip_blobs))
    net.copy_trained_layers_from(legacy)
    conv, ip = net.layer_by_name("conv1"), net.layer_by_name("ip")
    assert ip.blobs[0].shape == (4, 75) and ip.blobs[1].shape == (4,)  # the net's shapes are kept
    np.testing.assert_array_equal(host(conv.blobs[0]), w_conv)
    np.testing.assert_array_equal(host(conv.blobs[1]), b_conv)
    np.testing.assert_array_equal(host(ip.blobs[0]), w_ip)
    np.testing.assert_array_equal(host(ip.blobs[1]), b_ip)


@pytest.mark.parametrize(
    ("bias", "source_shape"),
    [
        (blob_proto(np.zeros(4), legacy=(1, 1, 4, 1)), "1 1 4 1 (4)"),  # a column, not the row 1x1x1x4
        (blob_proto(np.zeros(4), legacy=(4, 1, 1, 1)), "4 1 1 1 (4)"),  # legacy shapes pad at the front
        (blob_proto(np.zeros(4), shape=(1, 4)), "1 4 (4)"),  # N-d shapes must be equal
        (caffe_pb2.BlobProto(width=4, data=[0, 0, 0, 0]), "0 0 0 4 (0)"),  # unset legacy fields are 0
    ],
)  # fmt: skip
def test_shape_mismatch_names_the_layer_and_both_shapes_in_caffes_words(bias, source_shape):
    net = build(MLP)
    before = host(net.layer_by_name("fc").blobs[0]).copy()
    source = weights(("fc", "InnerProduct", [blob_proto(W_FC), bias]))
    with pytest.raises(NetError) as info:
        net.copy_trained_layers_from(source)
    assert str(info.value) == (
        "Cannot copy param 1 weights from layer 'fc'; shape mismatch.  Source param shape is "
        f"{source_shape}; target param shape is 4 (4). To learn this layer's parameters from scratch "
        "rather than copying from a saved net, rename the layer."
    )
    # Refused as a whole: the weights that did fit were not written either.
    np.testing.assert_array_equal(host(net.layer_by_name("fc").blobs[0]), before)


def test_transposed_weights_and_more_than_4_axes_are_refused():
    with pytest.raises(
        NetError,
        match=r"shape mismatch\.  Source param shape is 3 4 \(12\); target param shape is 4 3 \(12\)\.",
    ):
        build(MLP).copy_trained_layers_from(
            weights(("fc", "InnerProduct", [blob_proto(W_FC.T), blob_proto(B_FC)]))
        )
    five = CONV.replace('input_param { shape { dim: 1 dim: 2 dim: 5 dim: 5 } }',
                        'input_param { shape { dim: 1 dim: 2 dim: 3 dim: 5 dim: 5 } }')  # fmt: skip
    net = build(five)
    w = np.zeros((3, 2, 3, 3, 3), np.float32)
    assert net.layer_by_name("conv1").blobs[0].shape == w.shape
    flat = blob_proto(w, legacy=(3, 2, 9, 3))  # same count, but legacy fields never match 5 axes
    with pytest.raises(
        NetError, match=r"Source param shape is 3 2 9 3 \(162\); target param shape is 3 2 3 3 3 \(162\)"
    ):
        net.copy_trained_layers_from(weights(("conv1", "Convolution", [flat, blob_proto(np.zeros(3))])))
    net.copy_trained_layers_from(weights(("conv1", "Convolution", [blob_proto(w), blob_proto(np.zeros(3))])))


def test_same_name_other_type_loads_when_the_blobs_fit():
    # Caffe matches by name only: a Bias layer's blob fills a Scale layer of the same name.
    net = build("""
        layer { name: "input" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 dim: 1 dim: 1 } } }
        layer { name: "affine" type: "Scale" bottom: "x" top: "y" }
        layer { name: "proj" type: "Convolution" bottom: "y" top: "z"
                convolution_param { num_output: 2 kernel_size: 1 } }
    """)
    net.copy_trained_layers_from(weights(("affine", "Bias", [blob_proto(np.array([2.0, 3.0, 4.0]))])))
    np.testing.assert_array_equal(host(net.layer_by_name("affine").blobs[0]), [2, 3, 4])
    ip_weights = weights(("proj", "InnerProduct", [blob_proto(np.zeros((2, 3))), blob_proto(np.zeros(2))]))
    expected = (
        r"from layer 'proj'; shape mismatch\.  Source param shape is 2 3 \(6\); target param shape is 2 3 1 1"
    )
    with pytest.raises(NetError, match=expected):
        net.copy_trained_layers_from(ip_weights)


def test_double_data_wins_and_diffs_are_copied():
    source = weights(("fc", "InnerProduct", [blob_proto(W_FC), blob_proto(B_FC)]))
    weight = source.layer[0].blobs[0]
    precise = (np.arange(12, dtype=np.float64) + 1) / 3  # not representable in float32
    weight.double_data.extend(precise.tolist())  # both present: Caffe reads double_data
    weight.double_diff.extend((-precise).tolist())
    source.layer[0].blobs[1].diff.extend([0.5, 1.5, 2.5, 3.5])
    single = build(MLP)
    single.copy_trained_layers_from(source)
    fc = single.layer_by_name("fc")
    np.testing.assert_array_equal(host(fc.blobs[0]), precise.astype(np.float32).reshape(4, 3))
    np.testing.assert_array_equal(
        backend.to_host(fc.blobs[0].diff), -precise.astype(np.float32).reshape(4, 3)
    )
    np.testing.assert_array_equal(backend.to_host(fc.blobs[1].diff), [0.5, 1.5, 2.5, 3.5])
    double = build(MLP, dtype=np.float64)
    double.copy_trained_layers_from(source)
    np.testing.assert_array_equal(host(double.layer_by_name("fc").blobs[0]), precise.reshape(4, 3))
    # No diff in the source: the net's diff is left alone, as FromProto leaves it.
    plain = build(MLP)
    plain.layer_by_name("fc").blobs[0].diff[...] = 7
    plain.copy_trained_layers_from(weights(("fc", "InnerProduct", [blob_proto(W_FC), blob_proto(B_FC)])))
    assert (backend.to_host(plain.layer_by_name("fc").blobs[0].diff) == 7).all()


@pytest.mark.parametrize("field", ["data", "double_data", "diff"])
def test_too_few_values_is_an_error_naming_the_layer(field):
    source = weights(("fc", "InnerProduct", [blob_proto(W_FC), blob_proto(B_FC)]))
    bias = source.layer[0].blobs[1]
    if field == "data":
        bias.ClearField("data")  # a blob with a shape and no values: FromProto's count check fails
    else:
        getattr(bias, field).extend([1.0, 2.0])
    net = build(MLP)
    with pytest.raises(
        NetError, match=rf"param 1 weights from layer 'fc': its {field} holds \d values for the shape 4 \(4\)"
    ):
        net.copy_trained_layers_from(source)
    assert not host(net.layer_by_name("fc").blobs[0]).any()  # nothing written (the filler's zeros remain)


def test_a_v1_caffemodel_loads_from_its_file(tmp_path: Path):
    legacy = caffe_pb2.NetParameter(name="mlp")
    v1 = caffe_pb2.V1LayerParameter
    fc = legacy.layers.add(name="fc", type=v1.INNER_PRODUCT, bottom=["data"], top=["fc"], blobs_lr=[1, 2])
    fc.blobs.extend([blob_proto(W_FC, legacy=(1, 1, 4, 3)), blob_proto(B_FC, legacy=(1, 1, 1, 4))])
    legacy.layers.add(name="relu", type=v1.RELU, bottom=["fc"], top=["fc"])
    out = legacy.layers.add(name="out", type=v1.INNER_PRODUCT, bottom=["fc"], top=["out"])
    out.blobs.extend([blob_proto(W_OUT, legacy=(1, 1, 2, 4)), blob_proto(B_OUT, legacy=(1, 1, 1, 2))])
    path = tmp_path / "mlp_v1.caffemodel"
    write_caffemodel(path, legacy)
    net = build(MLP)
    net.copy_trained_layers_from(str(path))
    np.testing.assert_array_equal(host(net.layer_by_name("fc").blobs[0]), W_FC)
    np.testing.assert_array_equal(host(net.layer_by_name("out").blobs[1]), B_OUT)
    # The same NetParameter handed over in memory is upgraded too.
    other = build(MLP)
    other.copy_trained_layers_from(legacy)
    np.testing.assert_array_equal(host(other.layer_by_name("out").blobs[0]), W_OUT)


def test_a_v0_caffemodel_with_a_padding_layer_loads(tmp_path: Path):
    w_conv = RNG.normal(size=(3, 2, 3, 3)).astype(np.float32)
    w_ip = RNG.normal(size=(4, 75)).astype(np.float32)
    v0 = caffe_pb2.NetParameter(name="conv", input=["data"], input_dim=[1, 2, 5, 5])
    pad = v0.layers.add(bottom=["data"], top=["pad1"])
    pad.layer.name, pad.layer.type, pad.layer.pad = "pad1", "padding", 1
    conv = v0.layers.add(bottom=["pad1"], top=["conv1"])
    conv.layer.name, conv.layer.type, conv.layer.num_output, conv.layer.kernelsize = "conv1", "conv", 3, 3
    conv.layer.blobs.extend(
        [blob_proto(w_conv, legacy=(3, 2, 3, 3)), blob_proto(np.ones(3), legacy=(1, 1, 1, 3))]
    )
    ip = v0.layers.add(bottom=["conv1"], top=["ip"])
    ip.layer.name, ip.layer.type, ip.layer.num_output = "ip", "innerproduct", 4
    ip.layer.blobs.extend(
        [blob_proto(w_ip, legacy=(1, 1, 4, 75)), blob_proto(np.ones(4), legacy=(1, 1, 1, 4))]
    )
    path = tmp_path / "conv_v0.caffemodel"
    write_caffemodel(path, v0)
    upgraded = read_caffemodel(path)
    assert [(layer.name, layer.type) for layer in upgraded.layer] == [
        ("input", "Input"), ("conv1", "Convolution"), ("ip", "InnerProduct"),
    ]  # fmt: skip
    assert list(upgraded.layer[1].convolution_param.pad) == [1]
    assert list(upgraded.layer[1].bottom) == ["data"]
    net = build(CONV)
    net.copy_trained_layers_from(path)
    np.testing.assert_array_equal(host(net.layer_by_name("conv1").blobs[0]), w_conv)
    np.testing.assert_array_equal(host(net.layer_by_name("ip").blobs[0]), w_ip)
    # Building a net from the caffemodel itself fails as in Caffe: a layer handed its blobs at set-up
    # takes their shapes (FromProto with reshape), and a legacy 1x1x1x3 bias is not the conv's 3.
    with pytest.raises(
        NetError, match=r"(?i)incorrect bias shape: expected shape 3 \(3\); instead, shape was 1 1 1 3"
    ):
        Net(upgraded, phase=caffe_pb2.TEST)


def test_a_real_caffe_model_still_loads_after_being_rewritten_in_v1_format(goldens: Path, tmp_path: Path):
    case = goldens / GOLDEN_IP
    modern = read_caffemodel(case / "weights.caffemodel")
    v1 = caffe_pb2.NetParameter(name=modern.name)
    for layer in modern.layer:
        old = v1.layers.add(name=layer.name, bottom=layer.bottom, top=layer.top)
        if layer.type == "InnerProduct":
            old.type = caffe_pb2.V1LayerParameter.INNER_PRODUCT
        for blob in layer.blobs:  # every blob in the 4-D legacy form, padded at the front
            dims = [1] * (4 - len(blob.shape.dim)) + list(blob.shape.dim)
            old.blobs.add(num=dims[0], channels=dims[1], height=dims[2], width=dims[3], data=blob.data)
    path = tmp_path / "ip_v1.caffemodel"
    write_caffemodel(path, v1)
    from proto.textio import read_net

    reference, rewritten = (Net(read_net(case / "net.prototxt"), phase=caffe_pb2.TEST) for _ in range(2))
    reference.copy_trained_layers_from(case / "weights.caffemodel")
    rewritten.copy_trained_layers_from(path)
    for mine, theirs in zip(rewritten.layer_by_name("ip").blobs, reference.layer_by_name("ip").blobs):
        assert mine.shape == theirs.shape
        np.testing.assert_array_equal(host(mine), host(theirs))
    assert host(reference.layer_by_name("ip").blobs[0]).any()


def test_hdf5_weights_load_through_the_same_call(tmp_path: Path):
    from engine.weights import write_net_hdf5

    trained = build(MLP)
    trained.copy_trained_layers_from(weights(("fc", "InnerProduct", [blob_proto(W_FC), blob_proto(B_FC)])))
    path = tmp_path / "mlp.caffemodel.h5"
    write_net_hdf5(trained, path)
    net = build(MLP)
    net.copy_trained_layers_from(path)
    np.testing.assert_array_equal(host(net.layer_by_name("fc").blobs[0]), W_FC)


# --- a caffemodel over 64 MB, written byte by byte (the protobuf wire format, not our writer) ---------
def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field: a message, a string or a packed repeated scalar."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _blob_bytes(array: np.ndarray) -> bytes:
    shape = _field(1, b"".join(_varint(d) for d in array.shape))  # BlobShape.dim, packed int64
    return _field(7, shape) + _field(5, array.astype("<f4").tobytes())  # BlobProto.shape, .data


def test_a_caffemodel_over_64_mb_loads(tmp_path: Path):
    rows, cols = 4000, 4400  # 17.6 M floats: 70.4 MB of weights
    w = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) * np.float32(1e-3)
    b = np.linspace(-1, 1, rows, dtype=np.float32)
    layer = (
        _field(1, b"fc") + _field(2, b"InnerProduct") + _field(7, _blob_bytes(w)) + _field(7, _blob_bytes(b))
    )
    path = tmp_path / "big.caffemodel"
    path.write_bytes(_field(100, layer))  # NetParameter.layer
    assert path.stat().st_size > 64 * 2**20
    net = build(f"""
        layer {{ name: "input" type: "Input" top: "x" input_param {{ shape {{ dim: 1 dim: {cols} }} }} }}
        layer {{ name: "fc" type: "InnerProduct" bottom: "x" top: "y"
                 inner_product_param {{ num_output: {rows} }} }}
    """)  # fmt: skip
    net.copy_trained_layers_from(path)
    fc = net.layer_by_name("fc")
    np.testing.assert_array_equal(host(fc.blobs[0]), w)
    np.testing.assert_array_equal(host(fc.blobs[1]), b)
