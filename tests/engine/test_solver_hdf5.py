"""snapshot_format: HDF5 — Caffe's .caffemodel.h5 / .solverstate.h5 layouts, read back with h5py
directly; restore by extension; weights read by content; shared parameters; errors."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from google.protobuf import text_format
from test_solvers import EXTRA, solver_for

from engine.errors import EngineError, NetError
from engine.net import Net
from engine.weights import copy_trained_layers_from_file, write_net_hdf5
from proto import caffe_pb2, hdf5io
from proto.errors import FormatError

STEP = ' lr_policy: "multistep" gamma: 0.5 stepvalue: 1 stepvalue: 2'


def test_hdf5_snapshot_has_caffes_layout(tmp_path):
    prefix = tmp_path / "ls"
    solver = solver_for("Adam", EXTRA["Adam"] + STEP + f' snapshot_format: HDF5 snapshot_prefix: "{prefix}"')
    solver.step(3)
    model, state = solver.snapshot()
    assert model == f"{prefix}_iter_3.caffemodel.h5" and state == f"{prefix}_iter_3.solverstate.h5"
    with h5py.File(model, "r") as f:
        assert set(f) == {"data"}  # no diff group unless snapshot_diff
        assert set(f["data"]) == {"input", "ip", "loss"}  # every layer, parameters or not
        assert len(f["data/input"]) == 0 and len(f["data/loss"]) == 0
        weight, bias = f["data/ip/0"], f["data/ip/1"]
        assert weight.dtype == np.float32 and weight.shape == (1, 3) and bias.shape == (1,)
        np.testing.assert_array_equal(weight[()], solver.net.params[0].data)
        np.testing.assert_array_equal(bias[()], solver.net.params[1].data)
    with h5py.File(state, "r") as f:
        assert f["iter"].dtype == np.int32 and f["iter"].shape == (1,) and f["iter"][0] == 3
        assert f["current_step"].shape == (1,) and f["current_step"][0] == 2  # multistep passed 1 and 2
        name = f["learned_net"]
        assert name.shape == () and name.id.get_type().get_strpad() == h5py.h5t.STR_NULLTERM
        assert name[()].rstrip(b"\0").decode() == model
        # Adam: m of every parameter, then v of every parameter.
        assert sorted(f["history"]) == ["0", "1", "2", "3"]
        np.testing.assert_array_equal(f["history/1"][()], solver.history_of(1, 0))
        np.testing.assert_array_equal(f["history/2"][()], solver.history_of(0, 1))


def test_snapshot_diff_writes_every_gradient(tmp_path):
    solver = solver_for(
        "SGD", f'snapshot_format: HDF5 snapshot_diff: true snapshot_prefix: "{tmp_path / "d"}"'
    )
    solver.step(1)
    solver.net.forward_backward()
    model, _ = solver.snapshot()
    with h5py.File(model, "r") as f:
        np.testing.assert_array_equal(f["diff/ip/0"][()], solver.net.params[0].diff)
        np.testing.assert_array_equal(f["diff/ip/1"][()], solver.net.params[1].diff)


@pytest.mark.parametrize("kind", ["SGD", "AdaDelta"])
def test_restore_from_hdf5_continues_the_same_trajectory(tmp_path, kind):
    extra = EXTRA[kind] + STEP
    straight = solver_for(kind, extra)
    straight.step(5)
    first = solver_for(kind, extra + f' snapshot_format: HDF5 snapshot_prefix: "{tmp_path / "s"}"')
    first.step(3)
    _, state = first.snapshot()
    resumed = solver_for(kind, extra)  # fresh weights: restore must bring the learned ones
    resumed.restore(state)
    assert (resumed.iter, resumed.current_step) == (3, 2)
    resumed.step(2)
    for a, b in zip(straight.net.params, resumed.net.params):
        np.testing.assert_array_equal(a.data, b.data)


def test_restore_chooses_the_reader_by_extension_and_weights_by_content(tmp_path):
    binary = solver_for("SGD", EXTRA["SGD"] + f' snapshot_prefix: "{tmp_path / "b"}"')
    binary.step(2)
    model, state = binary.snapshot()
    # A binary state whose learned_net is an HDF5 file (content decides, not the name).
    h5_model = tmp_path / "weights.bin"
    write_net_hdf5(binary.net, h5_model)
    proto_state = caffe_pb2.SolverState.FromString(Path(state).read_bytes())
    proto_state.learned_net = str(h5_model)
    (tmp_path / "x.solverstate").write_bytes(proto_state.SerializeToString())
    resumed = solver_for("SGD", EXTRA["SGD"])
    resumed.restore(str(tmp_path / "x.solverstate"))
    np.testing.assert_array_equal(resumed.net.params[0].data, binary.net.params[0].data)
    # A binary state named *.h5 is read as HDF5, as Caffe's Restore does: a clear error.
    (tmp_path / "y.h5").write_bytes(proto_state.SerializeToString())
    with pytest.raises(FormatError, match=r"y\.h5.*HDF5"):
        solver_for("SGD", EXTRA["SGD"]).restore(str(tmp_path / "y.h5"))


def test_history_count_mismatch_and_missing_fields_are_clear(tmp_path):
    state = tmp_path / "s.solverstate.h5"
    hdf5io.write_solverstate(state, hdf5io.SolverStateH5(4, 0, None, [np.zeros((1, 3), np.float32)]))
    with pytest.raises(EngineError, match="Incorrect length of history blobs"):
        solver_for("SGD").restore(str(state))
    with h5py.File(tmp_path / "t.h5", "w") as f:
        f.create_dataset("iter", data=np.array([1], np.int32))
    with pytest.raises(FormatError, match="current_step"):
        solver_for("SGD").restore(str(tmp_path / "t.h5"))


FILLERS = 'weight_filler { type: "gaussian" } bias_filler { type: "gaussian" }'
SHARED = f"""
name: "shared"
layer {{ name: "in" type: "Input" top: "x" input_param {{ shape {{ dim: 2 dim: 3 }} }} }}
layer {{ name: "a" type: "InnerProduct" bottom: "x" top: "a" param {{ name: "w" }} param {{ name: "b" }}
        inner_product_param {{ num_output: 3 {FILLERS} }} }}
layer {{ name: "b" type: "InnerProduct" bottom: "a" top: "b" param {{ name: "w" }} param {{ name: "b2" }}
        inner_product_param {{ num_output: 3 {FILLERS} }} }}
"""


def shared_net() -> Net:
    return Net(text_format.Parse(SHARED, caffe_pb2.NetParameter()))


def test_shared_parameters_are_written_once_and_read_back(tmp_path):
    net = shared_net()
    path = tmp_path / "w.caffemodel.h5"
    write_net_hdf5(net, path)
    with h5py.File(path, "r") as f:
        assert sorted(f["data/a"]) == ["0", "1"]
        assert sorted(f["data/b"]) == ["1"]  # b's weight is a's, written by its owner only
    other = shared_net()
    copy_trained_layers_from_file(other, path)
    for mine, theirs in zip(other.params, net.params):
        np.testing.assert_array_equal(mine.data, theirs.data)


def test_weight_errors_name_the_file_and_layer(tmp_path):
    path = tmp_path / "w.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("data/a/0", data=np.zeros((3, 2), np.float32))  # transposed
        f.create_dataset("data/a/1", data=np.zeros(3, np.float32))
        f.create_dataset("data/unknown/0", data=np.zeros(1, np.float32))  # ignored
    with pytest.raises(NetError, match=r"w\.h5.*shape mismatch.*3 2 \(6\).*3 3 \(9\).*layer a"):
        copy_trained_layers_from_file(shared_net(), path)
    with h5py.File(path, "w") as f:
        f.create_dataset("data/a/1", data=np.zeros(3, np.float32))  # a owns its weight: it must be there
    with pytest.raises(NetError, match="Incompatible number of blobs for layer a"):
        copy_trained_layers_from_file(shared_net(), path)
    with h5py.File(path, "w") as f:
        f.create_dataset("weights", data=np.zeros(3))
    with pytest.raises(FormatError, match="no group 'data'"):
        copy_trained_layers_from_file(shared_net(), path)


def test_is_hdf5_looks_at_the_content(tmp_path):
    with h5py.File(tmp_path / "a.caffemodel", "w"):
        pass
    (tmp_path / "b.h5").write_bytes(b"\x08\x01")
    assert hdf5io.is_hdf5(tmp_path / "a.caffemodel")
    assert not hdf5io.is_hdf5(tmp_path / "b.h5")
    assert not hdf5io.is_hdf5(tmp_path / "missing")


def test_solver_weights_field_is_loaded_into_train_and_test_nets(tmp_path):
    donor = solver_for("SGD", "")
    donor.step(2)
    write_net_hdf5(donor.net, tmp_path / "a.caffemodel.h5")
    (tmp_path / "empty.caffemodel").write_bytes(caffe_pb2.NetParameter(name="none").SerializeToString())
    # One entry naming two files (Caffe splits on commas and trims): binary, then HDF5.
    files = f"{tmp_path}/empty.caffemodel , {tmp_path}/a.caffemodel.h5"
    solver = solver_for("SGD", f'weights: "{files}" test_iter: 1 test_interval: 9')
    for net in (solver.net, solver.test_nets[0]):
        for mine, theirs in zip(net.params, donor.net.params):
            np.testing.assert_array_equal(mine.data, theirs.data)


def test_hdf5_weights_fill_the_last_layer_of_a_repeated_name(tmp_path):
    """Caffe's HDF5 reader looks names up in a map that the last layer of a name wins."""
    text = """
    layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 2 } } }
    layer { name: "fc" type: "InnerProduct" bottom: "x" top: "a" inner_product_param { num_output: 2 } }
    layer { name: "fc" type: "InnerProduct" bottom: "a" top: "b" inner_product_param { num_output: 2 } }
    """
    net = Net(text_format.Parse(text, caffe_pb2.NetParameter()), phase=caffe_pb2.TEST)
    path = tmp_path / "w.caffemodel.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("data/fc/0", data=np.full((2, 2), 7, np.float32))
        f.create_dataset("data/fc/1", data=np.full((2,), 7, np.float32))
    copy_trained_layers_from_file(net, path)
    first, last = net.layers[1].blobs[0].data, net.layers[2].blobs[0].data
    assert np.all(last == 7) and not np.all(first == 7)
