"""What Caffe 1.0 lacks of our (master's) schema, and which nets and solvers use it.

The 1.0 field lists below are written out from BVLC/caffe's src/caffe/proto/caffe.proto as it stood
just before the 1.0 release (commit c9f71bd6b22f, plus InfogainLossParameter.axis of PR #3855, merged
before PR #5539 "Caffe 1.0"); the layer types from 1.0's src/caffe/layers. A schema cut down to those
lists stands in for 1.0's text parser: whatever ``newer_than_1_0`` flags must be refused by it, and
every bundled example must read in it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.message import Message

from app.checks import solver_caffe10_notice, solver_problems
from engine.layers import layer_types
from proto import caffe10, caffe_pb2

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"

# Field numbers in Caffe 1.0, for the messages master extended.
LAYER_1_0 = {
    "name": 1, "type": 2, "bottom": 3, "top": 4, "phase": 10, "loss_weight": 5, "param": 6, "blobs": 7,
    "propagate_down": 11, "include": 8, "exclude": 9, "transform_param": 100, "loss_param": 101,
    "accuracy_param": 102, "argmax_param": 103, "batch_norm_param": 139, "bias_param": 141,
    "concat_param": 104, "contrastive_loss_param": 105, "convolution_param": 106, "crop_param": 144,
    "data_param": 107, "dropout_param": 108, "dummy_data_param": 109, "eltwise_param": 110,
    "elu_param": 140, "embed_param": 137, "exp_param": 111, "flatten_param": 135, "hdf5_data_param": 112,
    "hdf5_output_param": 113, "hinge_loss_param": 114, "image_data_param": 115,
    "infogain_loss_param": 116, "inner_product_param": 117, "input_param": 143, "log_param": 134,
    "lrn_param": 118, "memory_data_param": 119, "mvn_param": 120, "parameter_param": 145,
    "pooling_param": 121, "power_param": 122, "prelu_param": 131, "python_param": 130,
    "recurrent_param": 146, "reduction_param": 136, "relu_param": 123, "reshape_param": 133,
    "scale_param": 142, "sigmoid_param": 124, "softmax_param": 125, "spp_param": 132, "slice_param": 126,
    "tanh_param": 127, "threshold_param": 128, "tile_param": 138, "window_data_param": 129,
}  # fmt: skip
SOLVER_1_0 = {
    "net": 24, "net_param": 25, "train_net": 1, "test_net": 2, "train_net_param": 21, "test_net_param": 22,
    "train_state": 26, "test_state": 27, "test_iter": 3, "test_interval": 4, "test_compute_loss": 19,
    "test_initialization": 32, "base_lr": 5, "display": 6, "average_loss": 33, "max_iter": 7,
    "iter_size": 36, "lr_policy": 8, "gamma": 9, "power": 10, "momentum": 11, "weight_decay": 12,
    "regularization_type": 29, "stepsize": 13, "stepvalue": 34, "clip_gradients": 35, "snapshot": 14,
    "snapshot_prefix": 15, "snapshot_diff": 16, "snapshot_format": 37, "solver_mode": 17, "device_id": 18,
    "random_seed": 20, "type": 40, "delta": 31, "momentum2": 39, "rms_decay": 38, "debug_info": 23,
    "snapshot_after_train": 28, "solver_type": 30, "layer_wise_reduce": 41,
}  # fmt: skip
POOLING_1_0 = {
    "pool": 1, "pad": 4, "pad_h": 9, "pad_w": 10, "kernel_size": 2, "kernel_h": 5, "kernel_w": 6,
    "stride": 3, "stride_h": 7, "stride_w": 8, "engine": 11, "global_pooling": 12,
}  # fmt: skip
KEPT_1_0 = {"LayerParameter": LAYER_1_0, "SolverParameter": SOLVER_1_0, "PoolingParameter": POOLING_1_0}
NOT_IN_1_0 = {"SwishParameter", "ClipParameter"}

# What Caffe 1.0's layer registry knows (REGISTER_LAYER_CLASS / REGISTER_LAYER_CREATOR).
TYPES_1_0 = {
    "AbsVal", "Accuracy", "ArgMax", "BNLL", "BatchNorm", "BatchReindex", "Bias", "Concat",
    "ContrastiveLoss", "Convolution", "Crop", "Data", "Deconvolution", "Dropout", "DummyData", "ELU",
    "Eltwise", "Embed", "EuclideanLoss", "Exp", "Filter", "Flatten", "HDF5Data", "HDF5Output",
    "HingeLoss", "Im2col", "ImageData", "InfogainLoss", "InnerProduct", "Input", "LRN", "LSTM",
    "LSTMUnit", "Log", "MVN", "MemoryData", "MultinomialLogisticLoss", "PReLU", "Parameter", "Pooling",
    "Power", "Python", "RNN", "ReLU", "Reduction", "Reshape", "SPP", "Scale", "Sigmoid",
    "SigmoidCrossEntropyLoss", "Silence", "Slice", "Softmax", "SoftmaxWithLoss", "Split", "TanH",
    "Threshold", "Tile", "WindowData",
}  # fmt: skip

NEWER_NET = """
name: "newer"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 8 dim: 8 } } }
layer { name: "pool1" type: "Pooling" bottom: "data" top: "pool1"
        pooling_param { pool: MAX kernel_size: 3 stride: 2 round_mode: FLOOR } }
layer { name: "act" type: "Clip" bottom: "pool1" top: "act" clip_param { min: 0 max: 6 } }
layer { name: "sw" type: "Swish" bottom: "act" top: "sw" swish_param { beta: 2 } }
layer { name: "relu" type: "ReLU" bottom: "sw" top: "sw" }
"""


def _schema_1_0() -> descriptor_pool.DescriptorPool:
    """Our schema cut down to Caffe 1.0's: the extended messages keep only their 1.0 fields."""
    file = descriptor_pb2.FileDescriptorProto()
    caffe_pb2.DESCRIPTOR.CopyToProto(file)
    kept = [m for m in file.message_type if m.name not in NOT_IN_1_0]
    del file.message_type[:]
    file.message_type.extend(kept)
    for message in file.message_type:
        if message.name in KEPT_1_0:
            fields = [f for f in message.field if KEPT_1_0[message.name].get(f.name) == f.number]
            del message.field[:]
            message.field.extend(fields)
        if message.name == "PoolingParameter":
            enums = [e for e in message.enum_type if e.name != "RoundMode"]
            del message.enum_type[:]
            message.enum_type.extend(enums)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return pool


POOL_1_0 = _schema_1_0()


def _read_1_0(text: str, type_name: str) -> Message:
    cls = message_factory.GetMessageClass(POOL_1_0.FindMessageTypeByName(f"caffe.{type_name}"))
    return text_format.Parse(text, cls())


def _net(text: str) -> caffe_pb2.NetParameter:
    return text_format.Parse(text, caffe_pb2.NetParameter())


# ---- the facts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("message", sorted(KEPT_1_0))
def test_fields_after_1_0_are_exactly_what_master_added(message):
    ours = {f.name: f.number for f in caffe_pb2.DESCRIPTOR.message_types_by_name[message].fields}
    for name, number in KEPT_1_0[message].items():  # 1.0's fields kept their numbers
        assert ours[name] == number, name
    assert set(ours) - set(KEPT_1_0[message]) == set(caffe10.FIELDS_AFTER_1_0[message])


def test_master_field_numbers_of_the_additions():
    fields = caffe_pb2.DESCRIPTOR.message_types_by_name
    assert fields["LayerParameter"].fields_by_name["swish_param"].number == 147
    assert fields["LayerParameter"].fields_by_name["clip_param"].number == 148
    assert fields["PoolingParameter"].fields_by_name["round_mode"].number == 13
    assert fields["SolverParameter"].fields_by_name["weights"].number == 42
    assert set(caffe10.SOLVER_FIELDS_AFTER_1_0) == {"weights"}
    assert caffe10.MESSAGES_AFTER_1_0 == NOT_IN_1_0
    assert not caffe10.ENUM_VALUES_AFTER_1_0


def test_layer_types_after_1_0_are_the_engines_types_1_0_lacks():
    assert set(layer_types()) - TYPES_1_0 == set(caffe10.LAYER_TYPES_AFTER_1_0) == {"Clip", "Swish"}
    assert set(layer_types()) >= TYPES_1_0


# ---- what gets flagged ----------------------------------------------------------------------------


def test_a_net_with_clip_swish_and_round_mode_is_flagged_once_per_thing():
    assert caffe10.newer_than_1_0(_net(NEWER_NET)) == [
        "layer 'pool1': pooling_param.round_mode came after Caffe 1.0",
        "layer 'act' (Clip): layer type Clip came after Caffe 1.0",
        "layer 'sw' (Swish): layer type Swish came after Caffe 1.0",
    ]


def test_flagged_nets_are_refused_by_a_1_0_parser_and_the_rest_reads():
    with pytest.raises(text_format.ParseError, match='has no field named "round_mode"'):
        _read_1_0(NEWER_NET, "NetParameter")
    fixed = NEWER_NET.replace("round_mode: FLOOR", "").replace("clip_param { min: 0 max: 6 }", "")
    fixed = fixed.replace("swish_param { beta: 2 }", "")
    _read_1_0(fixed, "NetParameter")  # only the layer types remain, and those the registry refuses
    assert all("layer type" in line for line in caffe10.newer_than_1_0(_net(fixed)))


def test_an_explicit_default_is_set_and_flagged_an_absent_field_is_not():
    explicit = _net('layer { name: "p" type: "Pooling" pooling_param { kernel_size: 2 round_mode: CEIL } }')
    absent = _net('layer { name: "p" type: "Pooling" pooling_param { kernel_size: 2 } }')
    assert caffe10.newer_than_1_0(explicit) == ["layer 'p': pooling_param.round_mode came after Caffe 1.0"]
    assert caffe10.newer_than_1_0(absent) == []
    with pytest.raises(text_format.ParseError):
        _read_1_0(text_format.MessageToString(explicit), "NetParameter")


def test_clip_param_on_another_type_and_round_mode_in_v1_layers():
    net = _net(
        'layer { name: "r" type: "ReLU" bottom: "x" top: "x" clip_param { min: 0 max: 1 } }\n'
        'layers { name: "old" type: POOLING pooling_param { kernel_size: 2 round_mode: FLOOR } }'
    )
    assert caffe10.newer_than_1_0(net) == [
        "layer 'r': clip_param came after Caffe 1.0",
        "layer 'old': pooling_param.round_mode came after Caffe 1.0",
    ]


def test_layer_notes_leave_the_name_to_the_caller():
    clip = _net(NEWER_NET).layer[2]
    assert caffe10.layer_notes(clip) == ["layer type Clip came after Caffe 1.0"]
    assert caffe10.newer_than_1_0(clip) == ["layer 'act': layer type Clip came after Caffe 1.0"]


def test_a_solver_with_weights_is_flagged_and_1_0_refuses_it():
    text = 'net: "train.prototxt" base_lr: 0.01 weights: "init.caffemodel"'
    solver = text_format.Parse(text, caffe_pb2.SolverParameter())
    assert caffe10.newer_than_1_0(solver) == ["solver: weights came after Caffe 1.0"]
    with pytest.raises(text_format.ParseError, match='has no field named "weights"'):
        _read_1_0(text, "SolverParameter")
    notice = solver_caffe10_notice(solver)
    assert notice == "needs a Caffe newer than 1.0 (BVLC master): weights came after Caffe 1.0"
    assert not any("1.0" in p for p in solver_problems(solver))  # a warning, never a refusal


def test_a_snapshot_without_prefix_is_flagged_and_with_one_is_not():
    bare = text_format.Parse('net: "n" snapshot: 100', caffe_pb2.SolverParameter())
    named = text_format.Parse('net: "n" snapshot: 100 snapshot_prefix: "n"', caffe_pb2.SolverParameter())
    assert [line.split(":")[1].strip() for line in caffe10.newer_than_1_0(bare)] == [
        "snapshot without snapshot_prefix"
    ]
    assert caffe10.newer_than_1_0(named) == []
    assert solver_caffe10_notice(named) is None


def test_inline_nets_of_a_solver_are_walked():
    solver = caffe_pb2.SolverParameter()
    solver.net_param.CopyFrom(_net(NEWER_NET))
    clip = 'layer { name: "c" type: "Clip" clip_param { min: 0 max: 1 } }'
    solver.test_net_param.add().CopyFrom(_net(clip))
    lines = caffe10.newer_than_1_0(solver)
    assert lines[0] == "solver: net_param: layer 'pool1': pooling_param.round_mode came after Caffe 1.0"
    assert lines[-1] == "solver: test_net_param.0: layer 'c' (Clip): layer type Clip came after Caffe 1.0"
    assert len(lines) == 4


# ---- the bundled examples are 1.0 nets ------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["mnist/lenet_train_test.prototxt", "mnist/lenet.prototxt", "caffenet.prototxt", "resnet.prototxt"],
)
def test_example_nets_are_not_flagged(name):
    text = (EXAMPLES / name).read_text()
    assert caffe10.newer_than_1_0(_net(text)) == []
    _read_1_0(text, "NetParameter")


@pytest.mark.parametrize("path", sorted(EXAMPLES.rglob("*.prototxt")), ids=lambda p: p.name)
def test_no_bundled_example_is_flagged(path):
    kind = "SolverParameter" if "solver" in path.name else "NetParameter"
    message = text_format.Parse(path.read_text(), getattr(caffe_pb2, kind)())
    assert caffe10.newer_than_1_0(message) == []
    _read_1_0(path.read_text(), kind)
    net = message if kind == "NetParameter" else None
    if net is not None:
        assert {layer.type for layer in net.layer} <= TYPES_1_0
