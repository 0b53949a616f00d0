"""Checks that proto/caffe.proto is the BVLC Caffe schema and that caffe_pb2 is up to date."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from google.protobuf import text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from proto import caffe_pb2

REPO = Path(__file__).resolve().parents[2]

OPTIONAL, REPEATED, REQUIRED = "optional", "repeated", "required"


def _gen_proto() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_proto", REPO / "tools" / "gen_proto.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _field(msg: type[Message], name: str) -> Any:  # the stubs split upb / pure-Python descriptors
    return msg.DESCRIPTOR.fields_by_name[name]


def _label(msg: type[Message], name: str) -> str:
    field = _field(msg, name)
    return REPEATED if field.is_repeated else REQUIRED if field.is_required else OPTIONAL


def test_generated_module_is_not_stale() -> None:
    stale = _gen_proto().stale_files()
    assert stale == [], f"regenerate with `python tools/gen_proto.py`: {stale}"


def test_file_identity() -> None:
    assert caffe_pb2.DESCRIPTOR.package == "caffe"
    assert caffe_pb2.DESCRIPTOR.name == "caffe.proto"
    assert caffe_pb2.LayerParameter.DESCRIPTOR.full_name == "caffe.LayerParameter"


def test_top_level_messages_match_bvlc_master() -> None:
    expected = {
        "BlobShape", "BlobProto", "BlobProtoVector", "Datum", "FillerParameter", "NetParameter",
        "SolverParameter", "SolverState", "NetState", "NetStateRule", "ParamSpec", "LayerParameter",
        "TransformationParameter", "LossParameter", "AccuracyParameter", "ArgMaxParameter",
        "ClipParameter", "ConcatParameter", "BatchNormParameter", "BiasParameter",
        "ContrastiveLossParameter", "ConvolutionParameter", "CropParameter", "DataParameter",
        "DropoutParameter", "DummyDataParameter", "EltwiseParameter", "ELUParameter", "EmbedParameter",
        "ExpParameter", "FlattenParameter", "HDF5DataParameter", "HDF5OutputParameter",
        "HingeLossParameter", "ImageDataParameter", "InfogainLossParameter", "InnerProductParameter",
        "InputParameter", "LogParameter", "LRNParameter", "MemoryDataParameter", "MVNParameter",
        "ParameterParameter", "PoolingParameter", "PowerParameter", "PythonParameter",
        "RecurrentParameter", "ReductionParameter", "ReLUParameter", "ReshapeParameter",
        "ScaleParameter", "SigmoidParameter", "SliceParameter", "SoftmaxParameter", "SwishParameter",
        "TanHParameter", "TileParameter", "ThresholdParameter", "WindowDataParameter", "SPPParameter",
        "V1LayerParameter", "V0LayerParameter", "PReLUParameter",
    }  # fmt: skip
    assert set(caffe_pb2.DESCRIPTOR.message_types_by_name) == expected
    assert set(caffe_pb2.DESCRIPTOR.enum_types_by_name) == {"Phase"}
    assert caffe_pb2.TRAIN == 0 and caffe_pb2.TEST == 1


def test_layer_parameter_field_numbers() -> None:
    expected = {
        "name": 1, "type": 2, "bottom": 3, "top": 4, "loss_weight": 5, "param": 6, "blobs": 7,
        "include": 8, "exclude": 9, "phase": 10, "propagate_down": 11,
        "transform_param": 100, "loss_param": 101, "accuracy_param": 102, "argmax_param": 103,
        "concat_param": 104, "convolution_param": 106, "data_param": 107, "dropout_param": 108,
        "eltwise_param": 110, "inner_product_param": 117, "lrn_param": 118, "pooling_param": 121,
        "relu_param": 123, "sigmoid_param": 124, "softmax_param": 125, "python_param": 130,
        "prelu_param": 131, "reshape_param": 133, "flatten_param": 135, "batch_norm_param": 139,
        "elu_param": 140, "bias_param": 141, "scale_param": 142, "input_param": 143,
        "crop_param": 144, "recurrent_param": 146, "swish_param": 147, "clip_param": 148,
    }  # fmt: skip
    msg = caffe_pb2.LayerParameter
    assert {name: _field(msg, name).number for name in expected} == expected
    # The highest number in use is 148 (clip_param).
    assert max(f.number for f in msg.DESCRIPTOR.fields) == 148
    for name in ("bottom", "top", "loss_weight", "param", "blobs", "include", "exclude"):
        assert _label(msg, name) == REPEATED, name
    assert _label(msg, "name") == OPTIONAL
    assert _field(msg, "phase").enum_type is caffe_pb2.Phase.DESCRIPTOR


def test_net_parameter_layout() -> None:
    msg = caffe_pb2.NetParameter
    assert _field(msg, "layer").number == 100
    assert _field(msg, "layers").number == 2
    assert _field(msg, "layers").message_type is caffe_pb2.V1LayerParameter.DESCRIPTOR
    assert _field(msg, "input_dim").type == FieldDescriptor.TYPE_INT32
    assert caffe_pb2.NetState().phase == caffe_pb2.TEST


def test_filler_defaults() -> None:
    filler = caffe_pb2.FillerParameter()
    assert filler.type == "constant"
    assert (filler.value, filler.min, filler.max, filler.mean, filler.std) == (0, 0, 1, 0, 1)
    assert filler.sparse == -1
    assert filler.variance_norm == caffe_pb2.FillerParameter.FAN_IN
    assert dict(caffe_pb2.FillerParameter.VarianceNorm.items()) == {"FAN_IN": 0, "FAN_OUT": 1, "AVERAGE": 2}


def test_solver_defaults() -> None:
    solver = caffe_pb2.SolverParameter()
    assert solver.type == "SGD"
    assert not _field(caffe_pb2.SolverParameter, "lr_policy").has_default_value
    assert solver.lr_policy == ""
    assert solver.momentum2 == pytest.approx(0.999, rel=1e-6)
    assert solver.delta == pytest.approx(1e-8, rel=1e-6)
    assert solver.rms_decay == pytest.approx(0.99, rel=1e-6)
    assert solver.snapshot_format == caffe_pb2.SolverParameter.BINARYPROTO == 1
    assert solver.solver_mode == caffe_pb2.SolverParameter.GPU == 1
    assert solver.solver_type == caffe_pb2.SolverParameter.SGD
    assert solver.random_seed == -1
    assert _field(caffe_pb2.SolverParameter, "random_seed").type == FieldDescriptor.TYPE_INT64
    assert (solver.average_loss, solver.iter_size) == (1, 1)
    assert solver.clip_gradients == -1
    assert solver.regularization_type == "L2"
    assert solver.test_initialization is True
    assert solver.snapshot_after_train is True
    assert solver.layer_wise_reduce is True
    numbers = {f.name: f.number for f in solver.DESCRIPTOR.fields}
    assert (numbers["net"], numbers["base_lr"], numbers["type"], numbers["weights"]) == (24, 5, 40, 42)
    assert _label(caffe_pb2.SolverParameter, "weights") == REPEATED


def test_param_spec_and_loss_parameter() -> None:
    spec = caffe_pb2.ParamSpec()
    assert (spec.lr_mult, spec.decay_mult) == (1, 1)
    assert spec.share_mode == caffe_pb2.ParamSpec.STRICT
    loss = caffe_pb2.LossParameter()
    assert loss.normalization == caffe_pb2.LossParameter.VALID
    assert dict(caffe_pb2.LossParameter.NormalizationMode.items()) == {
        "FULL": 0,
        "VALID": 1,
        "BATCH_SIZE": 2,
        "NONE": 3,
    }


def test_convolution_spatial_fields_are_repeated() -> None:
    msg = caffe_pb2.ConvolutionParameter
    expected = {"pad": 3, "kernel_size": 4, "stride": 6, "dilation": 18}
    for name, number in expected.items():
        assert _label(msg, name) == REPEATED, name
        assert _field(msg, name).number == number
        assert _field(msg, name).type == FieldDescriptor.TYPE_UINT32
    assert (_field(msg, "kernel_h").number, _label(msg, "kernel_h")) == (11, OPTIONAL)
    conv = caffe_pb2.ConvolutionParameter()
    assert (conv.bias_term, conv.group, conv.axis, conv.pad_h) == (True, 1, 1, 0)


def test_pooling_parameter() -> None:
    msg = caffe_pb2.PoolingParameter
    # Unlike convolution, pooling keeps scalar pad/kernel_size/stride.
    for name in ("pad", "kernel_size", "stride"):
        assert _label(msg, name) == OPTIONAL, name
    pool = caffe_pb2.PoolingParameter()
    assert pool.pool == caffe_pb2.PoolingParameter.MAX
    assert (pool.stride, pool.pad, pool.global_pooling) == (1, 0, False)
    assert _field(msg, "round_mode").number == 13
    assert pool.round_mode == caffe_pb2.PoolingParameter.CEIL
    assert dict(caffe_pb2.PoolingParameter.RoundMode.items()) == {"CEIL": 0, "FLOOR": 1}
    assert dict(caffe_pb2.PoolingParameter.PoolMethod.items()) == {"MAX": 0, "AVE": 1, "STOCHASTIC": 2}


def test_clip_bounds_are_required() -> None:
    msg = caffe_pb2.ClipParameter
    assert _label(msg, "min") == REQUIRED
    assert _label(msg, "max") == REQUIRED
    assert not caffe_pb2.ClipParameter(min=0.0).IsInitialized()
    assert caffe_pb2.ClipParameter(min=0.0, max=6.0).IsInitialized()
    assert caffe_pb2.SwishParameter().beta == 1


def test_v1_layer_type_enum() -> None:
    v1 = caffe_pb2.V1LayerParameter
    expected = {
        "NONE": 0, "ACCURACY": 1, "CONVOLUTION": 4, "DATA": 5, "DROPOUT": 6, "INNER_PRODUCT": 14,
        "LRN": 15, "POOLING": 17, "RELU": 18, "SOFTMAX": 20, "SOFTMAX_LOSS": 21, "SPLIT": 22,
        "ELTWISE": 25, "ABSVAL": 35, "DECONVOLUTION": 39,
    }  # fmt: skip
    assert {name: v1.LayerType.Value(name) for name in expected} == expected
    assert len(v1.LayerType.keys()) == 40
    assert (_field(v1, "param").number, _field(v1, "blob_share_mode").number) == (1001, 1002)
    assert _field(v1, "layer").message_type is caffe_pb2.V0LayerParameter.DESCRIPTOR


def test_wire_encoding() -> None:
    # dim is packed: tag (1 << 3 | 2), length 2, then the varints 1 and 2.
    assert _field(caffe_pb2.BlobShape, "dim").is_packed
    assert caffe_pb2.BlobShape(dim=[1, 2]).SerializeToString() == b"\x0a\x02\x01\x02"
    # Field 106 as a length-delimited tag is varint 850 = d2 06; num_output=20 is 08 14.
    layer = caffe_pb2.LayerParameter(name="c")
    layer.convolution_param.num_output = 20
    assert layer.SerializeToString() == b"\x0a\x01c\xd2\x06\x02\x08\x14"
    # BlobProto.data (5) is packed floats.
    assert caffe_pb2.BlobProto(data=[1.0]).SerializeToString() == b"\x2a\x04\x00\x00\x80\x3f"


LENET = """
name: "LeNet"
layer {
  name: "mnist"  type: "Data"  top: "data"  top: "label"
  include { phase: TRAIN }
  transform_param { scale: 0.00390625 }
  data_param { source: "examples/mnist/mnist_train_lmdb"  batch_size: 64  backend: LMDB }
}
layer {
  name: "conv1"  type: "Convolution"  bottom: "data"  top: "conv1"
  param { lr_mult: 1 }
  param { lr_mult: 2 }
  convolution_param {
    num_output: 20  kernel_size: 5  stride: 1
    weight_filler { type: "xavier" }
    bias_filler { type: "constant" }
  }
}
layer {
  name: "pool1"  type: "Pooling"  bottom: "conv1"  top: "pool1"
  pooling_param { pool: MAX  kernel_size: 2  stride: 2 }
}
layer {
  name: "ip1"  type: "InnerProduct"  bottom: "pool1"  top: "ip1"
  inner_product_param { num_output: 500  weight_filler { type: "xavier" } }
}
layer { name: "relu1"  type: "ReLU"  bottom: "ip1"  top: "ip1" }
layer {
  name: "accuracy"  type: "Accuracy"  bottom: "ip1"  bottom: "label"  top: "accuracy"
  include { phase: TEST }
}
layer { name: "loss"  type: "SoftmaxWithLoss"  bottom: "ip1"  bottom: "label"  top: "loss" }
"""


def test_lenet_prototxt_parses_and_round_trips() -> None:
    net = text_format.Parse(LENET, caffe_pb2.NetParameter())
    assert net.name == "LeNet"
    assert [layer.type for layer in net.layer] == [
        "Data",
        "Convolution",
        "Pooling",
        "InnerProduct",
        "ReLU",
        "Accuracy",
        "SoftmaxWithLoss",
    ]
    data, conv, pool = net.layer[0], net.layer[1], net.layer[2]
    assert data.include[0].phase == caffe_pb2.TRAIN
    assert data.data_param.backend == caffe_pb2.DataParameter.LMDB
    assert data.transform_param.scale == 0.00390625
    assert list(conv.convolution_param.kernel_size) == [5]
    assert [p.lr_mult for p in conv.param] == [1, 2]
    assert conv.convolution_param.weight_filler.type == "xavier"
    assert pool.pooling_param.kernel_size == 2
    assert net.layer[5].include[0].phase == caffe_pb2.TEST
    assert not net.layer[4].HasField("relu_param")

    again = text_format.Parse(text_format.MessageToString(net), caffe_pb2.NetParameter())
    assert again == net
    assert caffe_pb2.NetParameter.FromString(net.SerializeToString()) == net


def test_solver_and_legacy_prototxt_parse() -> None:
    solver = text_format.Parse(
        'net: "lenet_train_test.prototxt" test_iter: 100 test_interval: 500 base_lr: 0.01 '
        'momentum: 0.9 weight_decay: 0.0005 lr_policy: "inv" gamma: 0.0001 power: 0.75 '
        'max_iter: 10000 snapshot_prefix: "lenet" solver_mode: CPU',
        caffe_pb2.SolverParameter(),
    )
    assert list(solver.test_iter) == [100]
    assert solver.lr_policy == "inv"
    assert solver.solver_mode == caffe_pb2.SolverParameter.CPU

    legacy = text_format.Parse(
        'layers { name: "conv1" type: CONVOLUTION bottom: "data" top: "conv1" '
        "blobs_lr: 1 blobs_lr: 2 convolution_param { num_output: 20 kernel_size: 5 } }",
        caffe_pb2.NetParameter(),
    )
    assert legacy.layers[0].type == caffe_pb2.V1LayerParameter.CONVOLUTION
    assert list(legacy.layers[0].blobs_lr) == [1, 2]
