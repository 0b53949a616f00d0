"""proto.binaryio: caffemodels, solver states, mean files and Datum written and read back equal."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format

from proto import caffe_pb2
from proto.binaryio import (
    datum_to_bytes,
    parse_datum,
    read_blob,
    read_caffemodel,
    read_net_any,
    read_solverstate,
    write_blob,
    write_caffemodel,
    write_solverstate,
)
from proto.textio import read_net, write_net


def _blob(*shape: int, seed: int = 0) -> caffe_pb2.BlobProto:
    values = np.random.default_rng(seed).standard_normal(int(np.prod(shape))).astype(np.float32)
    blob = caffe_pb2.BlobProto()
    blob.shape.dim.extend(shape)
    blob.data.extend(values.tolist())
    return blob


def _model() -> caffe_pb2.NetParameter:
    net = caffe_pb2.NetParameter(name="tiny")
    conv = net.layer.add(name="conv1", type="Convolution", bottom=["data"], top=["conv1"])
    conv.convolution_param.num_output = 4
    conv.convolution_param.kernel_size.append(3)
    conv.blobs.append(_blob(4, 3, 3, 3, seed=1))
    conv.blobs.append(_blob(4, seed=2))
    net.layer.add(name="relu1", type="ReLU", bottom=["conv1"], top=["conv1"])
    return net


def test_caffemodel_written_then_read_back_equal(tmp_path: Path):
    path = tmp_path / "tiny.caffemodel"
    net = _model()
    write_caffemodel(path, net)
    assert path.read_bytes() == net.SerializeToString()
    again = read_caffemodel(path)
    assert again == net
    weights = np.float32(again.layer[0].blobs[0].data).reshape(again.layer[0].blobs[0].shape.dim)
    assert weights.shape == (4, 3, 3, 3)


def test_golden_caffemodels_all_read(goldens: Path):
    cases = sorted((goldens / "layers").iterdir())
    assert len(cases) >= 17
    for case in cases:
        weights = read_caffemodel(case / "weights.caffemodel")
        net = read_net(case / "net.prototxt")
        assert weights.layer, case.name
        # Every layer of the prototxt is in the caffemodel (which also holds Caffe's Split layers).
        assert {layer.name for layer in net.layer} <= {layer.name for layer in weights.layer}, case.name
        for layer in weights.layer:
            for blob in layer.blobs:
                assert len(blob.data) == int(np.prod(blob.shape.dim)), (case.name, layer.name)
        assert read_net_any(case / "weights.caffemodel") == weights
        assert json.loads((case / "meta.json").read_text())["phase"] in ("TRAIN", "TEST")
    conv = next(layer for layer in read_caffemodel(goldens / "layers/convolution/weights.caffemodel").layer
                if layer.type == "Convolution")  # fmt: skip
    assert len(conv.blobs) == 2 and len(conv.blobs[0].shape.dim) == 4


def test_golden_solver_init_weights_read(goldens: Path):
    for path in sorted(goldens.glob("solvers/*/init.caffemodel")):
        assert any(layer.blobs for layer in read_caffemodel(path).layer), path


def test_v1_caffemodel_is_upgraded_on_read(tmp_path: Path):
    legacy = caffe_pb2.NetParameter(name="old")
    layer = legacy.layers.add(
        name="ip", type=caffe_pb2.V1LayerParameter.INNER_PRODUCT, bottom=["x"], top=["y"]
    )
    layer.blobs.append(_blob(3, 2))
    layer.blobs_lr.extend([1, 2])
    path = tmp_path / "old.caffemodel"
    write_caffemodel(path, legacy)
    net = read_caffemodel(path)
    assert not net.layers and net.layer[0].type == "InnerProduct"
    assert net.layer[0].blobs[0] == layer.blobs[0]
    assert read_caffemodel(path, upgrade=False) == legacy


def test_read_net_any_reads_text_and_binary(tmp_path: Path):
    net = _model()
    write_caffemodel(tmp_path / "w.caffemodel", net)
    write_net(tmp_path / "w.prototxt", net)
    assert read_net_any(tmp_path / "w.caffemodel") == read_net_any(tmp_path / "w.prototxt") == net


def test_solverstate_round_trip(tmp_path: Path):
    state = caffe_pb2.SolverState(iter=500, learned_net="lenet_iter_500.caffemodel", current_step=1)
    state.history.extend([_blob(4, 3, 3, 3), _blob(4)])
    path = tmp_path / "lenet_iter_500.solverstate"
    write_solverstate(path, state)
    assert read_solverstate(path) == state


def test_mean_binaryproto_round_trip(tmp_path: Path):
    mean = caffe_pb2.BlobProto(num=1, channels=3, height=4, width=5)  # the legacy 4-D header
    mean.data.extend(np.arange(60, dtype=np.float32).tolist())
    path = tmp_path / "mean.binaryproto"
    write_blob(path, mean)
    again = read_blob(path)
    assert again == mean and (again.num, again.channels, again.height, again.width) == (1, 3, 4, 5)


def test_datum_round_trip():
    datum = caffe_pb2.Datum(channels=1, height=2, width=3, data=bytes(range(6)), label=7)
    assert parse_datum(datum_to_bytes(datum)) == datum
    encoded = caffe_pb2.Datum(data=b"\x89PNG...", encoded=True, label=1)
    assert parse_datum(datum_to_bytes(encoded)).encoded
    floats = caffe_pb2.Datum(channels=2, height=1, width=1, float_data=[0.5, -1.25])
    assert list(parse_datum(datum_to_bytes(floats)).float_data) == [0.5, -1.25]


def test_text_prototxt_with_blobs_is_accepted_by_read_net_any(tmp_path: Path):
    path = tmp_path / "weights.prototxt"
    path.write_text(text_format.MessageToString(_model()))
    assert read_net_any(path).layer[0].blobs[1] == _model().layer[0].blobs[1]


@pytest.mark.parametrize("upgrade", [True, False])
def test_upgrade_flag_is_respected_for_current_models(tmp_path: Path, upgrade: bool):
    write_caffemodel(tmp_path / "m.caffemodel", _model())
    assert read_caffemodel(tmp_path / "m.caffemodel", upgrade=upgrade) == _model()
