"""proto.textio and proto.atomic: prototxt in Caffe's style, read back equal, written atomically."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from proto import caffe_pb2
from proto.atomic import write_bytes_atomic, write_text_atomic
from proto.textio import (
    message_to_text,
    net_to_text,
    parse_net,
    parse_solver,
    read_net,
    read_solver,
    solver_to_text,
    write_net,
    write_solver,
)

LENET = """# LeNet, as in Caffe's examples
name: "LeNet"
layer {
  name: "mnist"  type: "Data"  top: "data"  top: "label"
  include { phase: TRAIN }
  transform_param { scale: 0.00390625 }
  data_param { source: "mnist_train_lmdb"  batch_size: 64  backend: LMDB }
}
layer {
  name: "conv1"  type: "Convolution"  bottom: "data"  top: "conv1"
  param { lr_mult: 1 }  param { lr_mult: 2 }
  convolution_param { num_output: 20  kernel_size: 5  stride: 1
    weight_filler { type: "xavier" }  bias_filler { type: "constant" } }
}
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool1" top: "ip1"
  inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip1" bottom: "label" top: "loss" }
"""


def test_parse_print_parse_is_identity():
    net = parse_net(LENET)
    text = net_to_text(net)
    again = parse_net(text)
    assert again == net
    assert net_to_text(again) == text  # printing is stable


def test_printing_follows_caffe_style():
    net = parse_net('layer { name: "a" type: "ReLU" } force_backward: true name: "n"')
    # Fields in number order (layer = 100 comes last), two-space indent, enums by name.
    assert net_to_text(net) == 'name: "n"\nforce_backward: true\nlayer {\n  name: "a"\n  type: "ReLU"\n}\n'
    pool = caffe_pb2.PoolingParameter(pool=caffe_pb2.PoolingParameter.AVE)
    assert message_to_text(pool) == "pool: AVE\n"


def test_floats_print_shortest_and_read_back_to_the_same_float32():
    solver = parse_solver("base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 gamma: 0.0001 delta: 1e-08")
    assert solver_to_text(solver) == (
        "base_lr: 0.01\ngamma: 0.0001\nmomentum: 0.9\nweight_decay: 0.0005\ndelta: 1e-08\n"
    )
    values = np.random.default_rng(0).standard_normal(500).astype(np.float32) * np.float32(1e3)
    values = np.concatenate([values, np.float32([1e-38, 3.4028235e38, 0.1, 1 / 3, 0.0, -0.0])])
    blob = caffe_pb2.BlobProto(data=values.tolist())
    again = caffe_pb2.BlobProto()
    from google.protobuf import text_format

    text_format.Parse(message_to_text(blob), again)
    assert np.array_equal(np.float32(again.data), values)
    assert np.array_equal(np.signbit(np.float32(again.data)), np.signbit(values))


def test_non_ascii_strings():
    net = caffe_pb2.NetParameter(name="réseau")
    assert net_to_text(net) == 'name: "r\\303\\251seau"\n'  # C++ TextFormat::Print escapes as octal
    assert net_to_text(net, as_utf8=True) == 'name: "réseau"\n'
    assert parse_net(net_to_text(net)) == parse_net(net_to_text(net, as_utf8=True)) == net


def test_write_then_read(tmp_path: Path):
    path = tmp_path / "lenet.prototxt"
    net = parse_net(LENET)
    write_net(path, net)
    assert read_net(path) == net
    assert path.read_text().endswith("}\n")
    solver = parse_solver('net: "lenet.prototxt" type: "Adam" base_lr: 0.001 test_iter: 100 test_iter: 5')
    write_solver(tmp_path / "solver.prototxt", solver)
    assert read_solver(tmp_path / "solver.prototxt") == solver
    assert sorted(os.listdir(tmp_path)) == ["lenet.prototxt", "solver.prototxt"]  # no temp files left


def test_bom_is_accepted(tmp_path: Path):
    path = tmp_path / "bom.prototxt"
    path.write_bytes(b'\xef\xbb\xbfname: "x"\n')
    assert read_net(path).name == "x"


def test_read_solver_can_apply_caffes_snapshot_prefix(tmp_path: Path):
    path = tmp_path / "lenet_solver.prototxt"
    path.write_text('net: "lenet.prototxt"\n')
    assert not read_solver(path).HasField("snapshot_prefix")
    assert read_solver(path, resolve_snapshot_prefix=True).snapshot_prefix == str(tmp_path / "lenet_solver")


def test_golden_nets_read_and_round_trip(goldens: Path):
    paths = sorted(goldens.glob("layers/*/net.prototxt")) + sorted(goldens.glob("solvers/*/net.prototxt"))
    assert len(paths) >= 17
    for path in paths:
        net = read_net(path)
        assert net.layer and parse_net(net_to_text(net)) == net, path
    for path in sorted(goldens.glob("solvers/*/solver.prototxt")):
        solver = read_solver(path)
        assert solver.type and parse_solver(solver_to_text(solver)) == solver, path


def test_atomic_write_replaces_and_keeps_the_mode(tmp_path: Path):
    path = tmp_path / "f.prototxt"
    path.write_text("old")
    path.chmod(0o640)
    write_text_atomic(path, "new")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["f.prototxt"]


def test_atomic_write_leaves_the_old_file_when_it_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_bytes_atomic(path, b"new")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.bin"]  # the temporary file is gone


def test_atomic_write_refuses_a_symlink_at_the_target_naming_it(tmp_path: Path):
    target = tmp_path / "real.prototxt"
    target.write_text("old")
    link = tmp_path / "link.prototxt"
    link.symlink_to(target)
    with pytest.raises(OSError, match=f"cannot write {link}: it is a symbolic link"):
        write_text_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "old"  # neither the link nor its target changed
