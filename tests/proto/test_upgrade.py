"""proto.upgrade: legacy nets and solvers become what BVLC Caffe's upgrade_proto.cpp makes of them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from google.protobuf import text_format

from proto import caffe_pb2, upgrade, upgrade_v0
from proto.errors import FormatError
from proto.textio import parse_net, parse_solver, read_net


def _net(text: str) -> caffe_pb2.NetParameter:
    return text_format.Parse(text, caffe_pb2.NetParameter())


V0_NET = """
name: "CaffeNet"
layers {
  layer { name: "data" type: "data" source: "train-leveldb" meanfile: "mean.binaryproto"
          batchsize: 256 cropsize: 227 mirror: true }
  top: "data" top: "label"
}
layers {
  layer { name: "conv1" type: "conv" num_output: 96 kernelsize: 11 stride: 4
          weight_filler { type: "gaussian" std: 0.01 } bias_filler { type: "constant" value: 0 }
          blobs_lr: 1 blobs_lr: 2 weight_decay: 1 weight_decay: 0 }
  bottom: "data" top: "conv1"
}
layers { layer { name: "relu1" type: "relu" } bottom: "conv1" top: "conv1" }
layers { layer { name: "pool1" type: "pool" pool: MAX kernelsize: 3 stride: 2 } bottom: "conv1" top: "pool1" }
layers { layer { name: "norm1" type: "lrn" local_size: 5 alpha: 0.0001 beta: 0.75 }
         bottom: "pool1" top: "norm1" }
layers { layer { name: "pad2" type: "padding" pad: 2 } bottom: "norm1" top: "pad2" }
layers { layer { name: "conv2" type: "conv" num_output: 256 group: 2 kernelsize: 5 }
         bottom: "pad2" top: "conv2" }
layers { layer { name: "pad3" type: "padding" pad: 1 } bottom: "conv2" top: "pad3" }
layers { layer { name: "pool3" type: "pool" pool: AVE kernelsize: 3 } bottom: "pad3" top: "pool3" }
layers { layer { name: "fc8" type: "innerproduct" num_output: 1000 biasterm: false }
         bottom: "pool3" top: "fc8" }
layers { layer { name: "drop8" type: "dropout" dropout_ratio: 0.4 } bottom: "fc8" top: "fc8" }
layers { layer { name: "loss" type: "softmax_loss" } bottom: "fc8" bottom: "label" }
"""

V0_EXPECTED = """
name: "CaffeNet"
layer {
  name: "data" type: "Data" top: "data" top: "label"
  transform_param { mirror: true crop_size: 227 mean_file: "mean.binaryproto" }
  data_param { source: "train-leveldb" batch_size: 256 }
}
layer {
  name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
  convolution_param { num_output: 96 kernel_size: 11 stride: 4
    weight_filler { type: "gaussian" std: 0.01 } bias_filler { type: "constant" value: 0 } }
}
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "norm1" type: "LRN" bottom: "pool1" top: "norm1"
  lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 } }
layer { name: "conv2" type: "Convolution" bottom: "norm1" top: "conv2"
  convolution_param { num_output: 256 pad: 2 kernel_size: 5 group: 2 } }
layer { name: "pool3" type: "Pooling" bottom: "conv2" top: "pool3"
  pooling_param { pool: AVE kernel_size: 3 pad: 1 } }
layer { name: "fc8" type: "InnerProduct" bottom: "pool3" top: "fc8"
  inner_product_param { num_output: 1000 bias_term: false } }
layer { name: "drop8" type: "Dropout" bottom: "fc8" top: "fc8" dropout_param { dropout_ratio: 0.4 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc8" bottom: "label" }
"""


def test_v0_net_with_padding_layers():
    legacy = _net(V0_NET)
    assert upgrade.net_needs_upgrade(legacy) and upgrade_v0.net_needs_v0_to_v1_upgrade(legacy)
    result = upgrade.upgrade_net(legacy, "caffenet_v0.prototxt")
    assert result.steps == (upgrade.STEP_V0, upgrade.STEP_V1) and result.legacy
    assert result.problems == ()
    assert result.net == _net(V0_EXPECTED), text_format.MessageToString(result.net)
    conv2, pool3 = result.net.layer[5], result.net.layer[6]
    assert list(conv2.bottom) == ["norm1"] and list(conv2.convolution_param.pad) == [2]
    assert list(pool3.bottom) == ["conv2"] and pool3.pooling_param.pad == 1
    assert not any(layer.name.startswith("pad") for layer in result.net.layer)


def test_v0_field_that_does_not_apply_is_a_problem_not_an_error():
    net = _net('layers { layer { name: "r" type: "relu" num_output: 3 } bottom: "x" top: "x" } input: "x"')
    result = upgrade.upgrade_net(net)
    relu = result.net.layer[0]  # "x" has no shape: a bare input is dropped, no Input layer
    assert relu.type == "ReLU" and not relu.HasField("inner_product_param")
    assert len(result.problems) == 1 and "num_output" in result.problems[0]


def test_v0_keeps_only_what_caffe_keeps():
    net = _net('name: "n" force_backward: true state { level: 3 } input: "x" '
               "input_dim: 1 input_dim: 2 input_dim: 3 input_dim: 4 "
               'layers { layer { name: "r" type: "relu" } bottom: "x" top: "y" }')  # fmt: skip
    out = upgrade.upgrade_net_as_needed(net)
    assert out.force_backward and not out.HasField("state")  # UpgradeV0Net drops everything else
    assert [layer.type for layer in out.layer] == ["Input", "ReLU"]


V1_LENET = """
name: "LeNet"
layers {
  name: "mnist" type: DATA top: "data" top: "label"
  data_param { source: "mnist_train_lmdb" backend: LMDB batch_size: 64 scale: 0.00390625 }
  include: { phase: TRAIN }
}
layers {
  name: "mnist" type: DATA top: "data" top: "label"
  data_param { source: "mnist_test_lmdb" backend: LMDB batch_size: 100 scale: 0.00390625 }
  include: { phase: TEST }
}
layers {
  name: "conv1" type: CONVOLUTION bottom: "data" top: "conv1"
  blobs_lr: 1 blobs_lr: 2
  convolution_param { num_output: 20 kernel_size: 5 stride: 1
    weight_filler { type: "xavier" } bias_filler { type: "constant" } }
}
layers { name: "pool1" type: POOLING bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layers {
  name: "ip1" type: INNER_PRODUCT bottom: "pool1" top: "ip1"
  blobs_lr: 1 blobs_lr: 2 weight_decay: 1 weight_decay: 0
  inner_product_param { num_output: 500 weight_filler { type: "xavier" } bias_filler { type: "constant" } }
}
layers { name: "relu1" type: RELU bottom: "ip1" top: "ip1" }
layers { name: "ip2" type: INNER_PRODUCT bottom: "ip1" top: "ip2" blobs_lr: 1 blobs_lr: 2
  inner_product_param { num_output: 10 } }
layers { name: "accuracy" type: ACCURACY bottom: "ip2" bottom: "label" top: "accuracy"
  include: { phase: TEST } }
layers { name: "loss" type: SOFTMAX_LOSS bottom: "ip2" bottom: "label" top: "loss" loss_weight: 1 }
"""


def test_v1_lenet_upgrades_field_by_field():
    legacy = _net(V1_LENET)
    before = legacy.SerializeToString()
    result = upgrade.upgrade_net(legacy, "lenet_v1.prototxt")
    assert legacy.SerializeToString() == before  # never mutates its input
    assert result.steps == (upgrade.STEP_DATA, upgrade.STEP_V1)
    net = result.net
    assert len(net.layers) == 0 and net.name == "LeNet"
    assert [(layer.name, layer.type) for layer in net.layer] == [
        ("mnist", "Data"), ("mnist", "Data"), ("conv1", "Convolution"), ("pool1", "Pooling"),
        ("ip1", "InnerProduct"), ("relu1", "ReLU"), ("ip2", "InnerProduct"), ("accuracy", "Accuracy"),
        ("loss", "SoftmaxWithLoss"),
    ]  # fmt: skip
    train, test = net.layer[0], net.layer[1]
    assert [rule.phase for rule in train.include] == [caffe_pb2.TRAIN]
    assert [rule.phase for rule in test.include] == [caffe_pb2.TEST]
    assert list(train.top) == ["data", "label"]
    for data, source, batch in ((train, "mnist_train_lmdb", 64), (test, "mnist_test_lmdb", 100)):
        assert data.transform_param.scale == pytest.approx(1 / 256)
        assert not data.data_param.HasField("scale")  # moved, not copied
        assert (data.data_param.source, data.data_param.batch_size) == (source, batch)
        assert data.data_param.backend == caffe_pb2.DataParameter.LMDB
    conv1 = net.layer[2]
    assert (list(conv1.bottom), list(conv1.top)) == (["data"], ["conv1"])
    assert [(p.lr_mult, p.HasField("decay_mult")) for p in conv1.param] == [(1, False), (2, False)]
    assert conv1.convolution_param.num_output == 20
    assert list(conv1.convolution_param.kernel_size) == [5]
    assert conv1.convolution_param.weight_filler.type == "xavier"
    assert net.layer[3].pooling_param.pool == caffe_pb2.PoolingParameter.MAX
    ip1 = net.layer[4]
    assert [(p.lr_mult, p.decay_mult) for p in ip1.param] == [(1, 1), (2, 0)]
    assert ip1.inner_product_param.num_output == 500
    assert [rule.phase for rule in net.layer[7].include] == [caffe_pb2.TEST]
    assert list(net.layer[8].loss_weight) == [1]
    assert not upgrade.net_needs_upgrade(net)
    assert upgrade.upgrade_net(net).steps == ()  # idempotent


def test_v1_param_names_and_share_modes_become_param_specs():
    net = _net('layers { name: "a" type: INNER_PRODUCT param: "w" param: "b" '
               "blob_share_mode: PERMISSIVE blobs_lr: 3 }")  # fmt: skip
    layer = upgrade.upgrade_net_as_needed(net).layer[0]
    assert [(p.name, p.lr_mult) for p in layer.param] == [("w", 3), ("b", 1)]
    assert layer.param[0].share_mode == caffe_pb2.ParamSpec.PERMISSIVE
    assert not layer.param[1].HasField("share_mode")


def test_v1_net_with_both_layer_kinds_drops_the_new_ones():
    net = _net('layers { name: "old" type: RELU } layer { name: "new" type: "ReLU" }')
    result = upgrade.upgrade_net(net)
    assert [layer.name for layer in result.net.layer] == ["old"]
    assert len(result.problems) == 1


def test_data_upgrade_touches_every_data_layer_as_caffe_does():
    net = _net('layers { name: "a" type: IMAGE_DATA image_data_param { mirror: true crop_size: 7 } } '
               'layers { name: "b" type: WINDOW_DATA } layers { name: "c" type: RELU }')  # fmt: skip
    assert upgrade.net_needs_data_upgrade(net)
    a, b, c = upgrade.upgrade_net_as_needed(net).layer
    assert (a.transform_param.mirror, a.transform_param.crop_size) == (True, 7)
    assert not a.image_data_param.HasField("mirror")
    # Caffe's mutable_*() calls leave both messages present on every Data/ImageData/WindowData layer.
    assert b.HasField("transform_param") and b.HasField("window_data_param")
    assert not c.HasField("transform_param")


def test_input_fields_become_an_input_layer():
    net = _net('name: "deploy" input: "data" input_dim: 10 input_dim: 3 input_dim: 227 input_dim: 224 '
               'input: "im_info" input_dim: 1 input_dim: 3 input_dim: 1 input_dim: 1 '
               'layer { name: "conv" type: "Convolution" bottom: "data" top: "conv" }')  # fmt: skip
    result = upgrade.upgrade_net(net)
    assert result.steps == (upgrade.STEP_INPUT,) and result.legacy
    out = result.net
    assert not out.input and not out.input_dim and not out.input_shape
    first = out.layer[0]
    assert (first.name, first.type, list(first.top)) == ("input", "Input", ["data", "im_info"])
    assert [list(s.dim) for s in first.input_param.shape] == [[10, 3, 227, 224], [1, 3, 1, 1]]
    assert [layer.name for layer in out.layer] == ["input", "conv"]


def test_input_shape_wins_over_input_dim_and_bare_inputs_are_dropped():
    net = _net('input: "x" input_shape { dim: 2 dim: 5 } layer { name: "r" type: "ReLU" }')
    assert [list(s.dim) for s in upgrade.upgrade_net_as_needed(net).layer[0].input_param.shape] == [[2, 5]]
    bare = upgrade.upgrade_net_as_needed(_net('input: "x" layer { name: "r" type: "ReLU" }'))
    assert [layer.name for layer in bare.layer] == ["r"] and not bare.input


def test_batch_norm_param_specs_get_zero_rates_and_keep_their_names():
    net = _net('layer { name: "bn" type: "BatchNorm" param { lr_mult: 1 name: "m" } '
               'param { lr_mult: 1 decay_mult: 1 name: "v" } param { name: "f" } } '
               'layer { name: "bn1" type: "BatchNorm" param { lr_mult: 1 } }')  # fmt: skip
    result = upgrade.upgrade_net(net)
    assert result.steps == (upgrade.STEP_BATCHNORM,) and not result.legacy
    bn, bn1 = result.net.layer
    assert [(p.name, p.lr_mult, p.decay_mult) for p in bn.param] == [("m", 0, 0), ("v", 0, 0), ("f", 0, 0)]
    assert [p.lr_mult for p in bn1.param] == [1]  # only three specs mark the old definition


def test_batch_norm_golden_caffemodel_needs_only_the_batch_norm_step(goldens: Path, caplog):
    from proto.binaryio import read_caffemodel

    with caplog.at_level(logging.WARNING):
        net = read_caffemodel(goldens / "layers" / "batch_norm" / "weights.caffemodel")
    assert not caplog.records  # not reported as a legacy file
    bn = next(layer for layer in net.layer if layer.type == "BatchNorm")
    assert [(p.lr_mult, p.decay_mult) for p in bn.param] == [(0, 0)] * 3


def test_read_net_upgrades_and_logs(tmp_path: Path, caplog):
    path = tmp_path / "lenet_v1.prototxt"
    path.write_text(V1_LENET)
    with caplog.at_level(logging.WARNING, logger="proto.upgrade"):
        net = read_net(path)
    assert len(net.layer) == 9 and not net.layers
    assert any("was upgraded from a legacy format" in r.getMessage() for r in caplog.records)
    assert str(path) in caplog.records[0].getMessage()
    assert len(read_net(path, upgrade=False).layers) == 9
    assert len(parse_net(V1_LENET).layer) == 9


@pytest.mark.parametrize(
    ("enum", "name"),
    [("SGD", "SGD"), ("NESTEROV", "Nesterov"), ("ADAGRAD", "AdaGrad"), ("RMSPROP", "RMSProp"),
     ("ADADELTA", "AdaDelta"), ("ADAM", "Adam")],
)  # fmt: skip
def test_solver_type_enum_becomes_the_type_string(enum: str, name: str):
    old = parse_solver(f'net: "n.prototxt" base_lr: 0.01 solver_type: {enum}', upgrade=False)
    assert upgrade.solver_needs_upgrade(old)
    result = upgrade.upgrade_solver(old, "solver.prototxt")
    assert result.solver.type == name and not result.solver.HasField("solver_type")
    assert result.steps == (upgrade.STEP_SOLVER_TYPE,)
    assert old.HasField("solver_type")  # the input is left alone
    assert upgrade.upgrade_solver_as_needed(old) == result.solver


def test_nesterov_solver_read_from_file(tmp_path: Path):
    from proto.textio import read_solver

    path = tmp_path / "solver.prototxt"
    path.write_text('net: "lenet.prototxt"\nbase_lr: 0.01\nsolver_type: NESTEROV\nmomentum: 0.95\n')
    solver = read_solver(path)
    assert solver.type == "Nesterov" and not solver.HasField("solver_type")
    assert read_solver(path, upgrade=False).solver_type == caffe_pb2.SolverParameter.NESTEROV


def test_current_solver_needs_nothing():
    solver = parse_solver('type: "Adam" base_lr: 0.001')
    assert not upgrade.solver_needs_upgrade(solver)
    assert upgrade.upgrade_solver(solver).steps == ()


def test_solver_with_both_type_fields_is_refused():
    # Caffe's UpgradeSolverType CHECK-fails whenever both are present, even when they agree.
    for both in ('solver_type: ADAM type: "SGD"', 'solver_type: ADAM type: "Adam"'):
        with pytest.raises(FormatError, match="solver_type: ADAM") as info:
            parse_solver(both, "s.prototxt")
        assert str(info.value).startswith("s.prototxt: ")


def test_snapshot_prefix_defaults_like_caffe(tmp_path: Path):
    solver_file = tmp_path / "sub" / "lenet_solver.prototxt"
    plain = upgrade.upgrade_snapshot_prefix(caffe_pb2.SolverParameter(), solver_file)
    assert plain.snapshot_prefix == str(tmp_path / "sub" / "lenet_solver")
    folder = caffe_pb2.SolverParameter(snapshot_prefix=str(tmp_path))
    assert upgrade.upgrade_snapshot_prefix(folder, solver_file).snapshot_prefix == str(
        tmp_path / "lenet_solver"
    )
    prefix = caffe_pb2.SolverParameter(snapshot_prefix="snaps/lenet")
    assert upgrade.upgrade_snapshot_prefix(prefix, solver_file).snapshot_prefix == "snaps/lenet"


def test_tables_cover_the_schema():
    v1 = caffe_pb2.V1LayerParameter
    assert set(upgrade.V1_LAYER_TYPES) == set(v1.LayerType.values())
    assert set(upgrade.V1_PARAMS) == {f.name for f in v1.DESCRIPTOR.fields if f.name.endswith("_param")}
    for name in upgrade.V1_PARAMS:
        assert name in caffe_pb2.LayerParameter.DESCRIPTOR.fields_by_name, name
    for field, targets in upgrade_v0.V0_FIELDS:
        assert field in caffe_pb2.V0LayerParameter.DESCRIPTOR.fields_by_name, field
        for message, target in targets.values():
            sub = v1.DESCRIPTOR.fields_by_name[message].message_type
            assert target is None or target in sub.fields_by_name, (field, message, target)


def test_v1_step_keeps_every_net_level_field():
    net = _net('name: "n" force_backward: true debug_info: true state { phase: TEST level: 2 stage: "s" } '
               'layers { name: "r" type: RELU blobs { data: 1 shape { dim: 1 } } }')  # fmt: skip
    out = upgrade.upgrade_net(net).net
    assert (out.name, out.force_backward, out.debug_info) == ("n", True, True)
    assert (out.state.phase, out.state.level, list(out.state.stage)) == (caffe_pb2.TEST, 2, ["s"])
    assert [list(b.data) for b in out.layer[0].blobs] == [[1.0]] and not out.layers


def test_each_step_logs_caffes_lines(caplog):
    net = _net('input: "x" input_dim: 1 input_dim: 1 input_dim: 1 input_dim: 1 '
               'layers { name: "d" type: DATA data_param { mirror: true } } '
               'layer { name: "bn" type: "BatchNorm" param {} param {} param {} }')  # fmt: skip
    with caplog.at_level(logging.INFO, logger="proto.upgrade"):
        upgrade.upgrade_net(net, "old.prototxt")
    assert [r.getMessage() for r in caplog.records] == [
        "Attempting to upgrade input file specified using deprecated transformation parameters: old.prototxt",
        "Successfully upgraded file specified using deprecated data transformation parameters.",
        "Attempting to upgrade input file specified using deprecated V1LayerParameter: old.prototxt",
        "old.prototxt: Input NetParameter to be upgraded already specifies 'layer' fields; these will be "
        "ignored for the upgrade (the net mixes V1 'layers' and current 'layer' entries)",
        "Warning: had one or more problems upgrading V1LayerParameter (see above); continuing anyway.",
        "Attempting to upgrade input file specified using deprecated input fields: old.prototxt",
        "Successfully upgraded file specified using deprecated input fields.",
    ]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="proto.upgrade"):
        upgrade.upgrade_net(
            _net('layer { name: "bn" type: "BatchNorm" param {} param {} param {} }'), "bn.prototxt"
        )
    assert [r.getMessage() for r in caplog.records] == [
        "Attempting to upgrade batch norm layers using deprecated params: bn.prototxt",
        "Successfully upgraded batch norm layers using deprecated params.",
    ]
