"""The pycaffe surface, driven the way pycaffe scripts drive it (`import engine as caffe`)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as caffe

DEPLOY = """
name: "tiny"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 1 dim: 6 dim: 6 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 3 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "fc" type: "InnerProduct" bottom: "conv" top: "fc"
        inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }
"""

TRAIN = """
name: "tiny_train"
force_backward: true
layer { name: "data" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 2 dim: 1 dim: 6 dim: 6 } shape { dim: 2 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 3 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "fc" type: "InnerProduct" bottom: "conv" top: "fc"
        inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc" bottom: "label" top: "loss" }
layer { name: "acc" type: "Accuracy" bottom: "fc" bottom: "label" top: "acc" }
"""


@pytest.fixture
def deploy(tmp_path):
    path = tmp_path / "deploy.prototxt"
    path.write_text(DEPLOY)
    return str(path)


@pytest.fixture
def train(tmp_path):
    path = tmp_path / "train.prototxt"
    path.write_text(TRAIN)
    return str(path)


def test_module_surface():
    caffe.set_mode_cpu()
    caffe.set_random_seed(3)
    assert caffe.TRAIN == 0 and caffe.TEST == 1
    assert {"Convolution", "InnerProduct", "SoftmaxWithLoss", "Split"} <= set(caffe.layer_type_list())


def test_blobs_params_and_names(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    assert list(net.blobs) == ["data", "conv", "fc", "prob"]
    assert list(net.params) == ["conv", "fc"]
    assert net.params["conv"][0].data.shape == (3, 1, 3, 3)
    assert net.params["fc"][1].data.shape == (4,)
    assert net.inputs == ["data"] and net.outputs == ["prob"]
    assert net.blobs["conv"].shape == (2, 3, 4, 4) and net.blobs["conv"].count == 96
    assert net.blobs["data"].num == 2 and net.blobs["data"].channels == 1
    assert [layer.type for layer in net.layers] == ["Input", "Convolution", "ReLU", "InnerProduct", "Softmax"]
    assert net.top_names["relu"] == ["conv"] and net.bottom_names["fc"] == ["conv"]
    assert list(net.layer_dict) == ["data", "conv", "relu", "fc", "prob"]
    assert net.blob_loss_weights["prob"] == 0


def test_forward_with_keyword_inputs_and_writable_arrays(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    x = np.random.default_rng(0).normal(size=(2, 1, 6, 6)).astype(np.float32)
    out = net.forward(data=x)
    assert set(out) == {"prob"}
    np.testing.assert_allclose(out["prob"].sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(net.blobs["data"].data, x)
    net.params["fc"][0].data[...] = 0  # surgery through the returned array reaches the net
    net.params["fc"][1].data[...] = [1, 2, 3, 4]
    probs = net.forward(data=x)["prob"]
    expected = np.exp([1, 2, 3, 4]) / np.exp([1, 2, 3, 4]).sum()
    np.testing.assert_allclose(probs, np.tile(expected, (2, 1)), rtol=1e-5)
    with pytest.raises(Exception, match="Input blob arguments do not match net inputs"):
        net.forward(other=x)


def test_forward_start_end_and_extra_blobs(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    net.blobs["data"].data[...] = 1.0
    out = net.forward(end="fc")
    assert set(out) == {"fc"}
    out = net.forward(blobs=["conv"], start="fc")
    assert set(out) == {"prob", "conv"}


def test_reshape_inputs_then_net_reshape(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    net.blobs["data"].reshape(5, 1, 6, 6)
    net.reshape()
    assert net.blobs["conv"].shape == (5, 3, 4, 4)
    assert net.forward(data=np.ones((5, 1, 6, 6), np.float32))["prob"].shape == (5, 4)


def test_backward_returns_input_diffs(train):
    net = caffe.Net(train, caffe.TRAIN)
    net.blobs["data"].data[...] = np.random.default_rng(1).normal(size=(2, 1, 6, 6))
    net.blobs["label"].data[...] = [1, 3]
    out = net.forward()
    assert set(out) == {"loss", "acc"}
    diffs = net.backward()
    assert set(diffs) == {"data", "label"}
    assert np.abs(diffs["data"]).sum() > 0
    assert np.abs(net.params["conv"][0].diff).sum() > 0


def test_save_and_copy_from_round_trip(tmp_path, deploy):
    net = caffe.Net(deploy, caffe.TEST)
    path = str(tmp_path / "w.caffemodel")
    net.save(path)
    other = caffe.Net(deploy, caffe.TEST, weights=path)
    for name in net.params:
        for a, b in zip(net.params[name], other.params[name]):
            np.testing.assert_array_equal(a.data, b.data)
    legacy = caffe.Net(deploy, path, caffe.TEST)  # the deprecated argument order
    np.testing.assert_array_equal(legacy.params["fc"][0].data, net.params["fc"][0].data)


def test_hdf5_weights_round_trip(tmp_path, deploy):
    net = caffe.Net(deploy, caffe.TEST)
    path = str(tmp_path / "w.h5")
    net.save_hdf5(path)
    other = caffe.Net(deploy, caffe.TEST)
    other.copy_from(path)
    np.testing.assert_array_equal(other.params["conv"][0].data, net.params["conv"][0].data)


def test_forward_all_batches_and_unpads(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    x = np.random.default_rng(2).normal(size=(5, 1, 6, 6)).astype(np.float32)
    out = net.forward_all(data=x)
    assert out["prob"].shape == (5, 4)
    one = net.forward(data=x[4:5].repeat(2, axis=0))["prob"][0]
    np.testing.assert_allclose(out["prob"][4], one, rtol=1e-5)


def test_split_blobs_are_named_as_caffe_names_them(train):
    net = caffe.Net(train, caffe.TRAIN)
    assert "fc_fc_0_split_0" in net.blobs and "label_data_1_split_1" in net.blobs
    assert net.bottom_names["loss"] == ["fc_fc_0_split_0", "label_data_1_split_0"]


def test_callbacks_run_around_each_layer(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    seen: list[int] = []
    net.after_forward(seen.append)
    net.forward()
    assert seen == list(range(len(net.layers)))


def test_missing_phase_is_an_error(deploy):
    with pytest.raises(TypeError, match="phase"):
        caffe.Net(deploy)


SOLVER = """
net: "train.prototxt"
type: "Adam"
base_lr: 0.01
lr_policy: "fixed"
max_iter: 6
display: 0
snapshot_prefix: "snap"
random_seed: 1
"""


@pytest.fixture
def solver_file(tmp_path, train):
    path = tmp_path / "solver.prototxt"
    path.write_text(SOLVER)
    return str(path)


def test_get_solver_steps_and_exposes_nets(solver_file, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    solver = caffe.get_solver(solver_file)
    assert isinstance(solver, caffe.Solver) and solver.param.type == "Adam" and solver.iter == 0
    data = solver.net.blobs["data"].data
    data[...] = np.random.default_rng(0).normal(size=data.shape)
    solver.net.blobs["label"].data[...] = [0, 2]
    before = solver.net.params["fc"][0].data.copy()
    solver.step(2)
    assert solver.iter == 2
    assert not np.array_equal(before, solver.net.params["fc"][0].data)
    assert solver.test_nets == []
    starts = []
    solver.add_callback(lambda: starts.append(solver.iter), lambda: None)
    solver.solve()
    assert solver.iter == 6 and starts == [2, 3, 4, 5]


def test_typed_solver_classes_and_copy_from_before_stepping(solver_file, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # Caffe writes snapshot_prefix relative to the working directory
    solver = caffe.SGDSolver(solver_file)
    assert solver.param.type == "SGD"
    trained = caffe.Net(str(tmp_path / "train.prototxt"), caffe.TRAIN)
    trained.params["fc"][0].data[...] = 0.5
    weights = str(tmp_path / "trained.caffemodel")
    trained.save(weights)
    solver.net.copy_from(weights)
    np.testing.assert_array_equal(solver.net.params["fc"][0].data, 0.5)
    solver.snapshot()
    assert (tmp_path / "snap_iter_0.caffemodel").exists() and (tmp_path / "snap_iter_0.solverstate").exists()


def test_module_level_helpers_and_the_schema_under_caffe_proto():
    net_param = caffe.proto.caffe_pb2.NetParameter(name="x")
    assert net_param.name == "x"
    assert caffe.has_nccl() is False
    caffe.set_solver_count(1)
    caffe.set_solver_rank(0)
    assert caffe.solver_count() == 1 and caffe.solver_rank() == 0
    caffe.set_multiprocess(False)
    caffe.init_log()
    caffe.log("hello")


def test_caffe_io_is_reachable_as_pycaffe_scripts_reach_it():
    array = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    proto = caffe.io.array_to_blobproto(array)
    np.testing.assert_array_equal(caffe.io.blobproto_to_array(proto), array)


def test_net_layers_views_and_params_as_blobvecs(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    conv = net.layer_dict["conv"]
    assert isinstance(conv, caffe.Layer) and conv.type == "Convolution" and conv.phase == caffe.TEST
    assert net.layers[1] is conv  # the same view on every access, as pycaffe's LayerVec gives
    assert len(conv.blobs) == 2 and [b.shape for b in conv.blobs] == [(3, 1, 3, 3), (3,)]
    assert [b.shape for b in conv.blobs[1:]] == [(3,)] and conv.blobs[-1].count == 3
    assert net.params["conv"][0].num == 3 and net.params["conv"][0].channels == 1
    assert net.params["conv"][0].height == 3 and net.params["conv"][0].width == 3
    conv.blobs[1].data[...] = [1, 2, 3]  # writes through the layer reach the net's params
    np.testing.assert_array_equal(net.params["conv"][1].data, [1, 2, 3])
    assert len(net.layer_dict["relu"].blobs) == 0 and "relu" not in net.params


def test_missing_files_raise_as_pycaffe_does(deploy, tmp_path):
    missing = str(tmp_path / "missing.prototxt")
    with pytest.raises(RuntimeError, match=f"Could not open file {missing}"):
        caffe.Net(missing, caffe.TEST)
    with pytest.raises(FileNotFoundError, match="Could not open file .*nope.caffemodel"):
        caffe.Net(deploy, caffe.TEST, weights=str(tmp_path / "nope.caffemodel"))


def test_timer_measures_between_start_and_stop():
    import time

    from engine.pycaffe import Timer

    timer = Timer()
    assert timer.ms == 0  # never started
    timer.start()
    time.sleep(0.02)
    timer.stop()
    first = timer.ms
    assert 15 <= first < 1000
    time.sleep(0.01)
    assert timer.ms == first  # stopped: the reading stays
    timer.start()
    time.sleep(0.01)
    timer.start()  # a second start while running does not restart it
    assert timer.ms >= 9  # reading stops the running timer


def test_nccl_stands_in_as_in_a_caffe_built_without_it(solver_file, tmp_path, monkeypatch):
    """Multi-GPU scripts guard on has_nccl(); the NCCL object and its add_callback overload still exist."""
    monkeypatch.chdir(tmp_path)
    solver = caffe.get_solver(solver_file)
    assert caffe.has_nccl() is False
    nccl = caffe.NCCL(solver, "uid")
    solver.add_callback(nccl)  # pycaffe's second overload: adds nothing here
    solver.step(1)
    assert solver.iter == 1
    with pytest.raises(TypeError, match="two callables"):
        solver.add_callback(lambda: None)


def test_start_end_name_layers_and_return_their_tops_or_bottoms(tmp_path):
    """pycaffe returns the tops of layer `end` (forward) and the bottoms of layer `end` (backward)."""
    path = tmp_path / "named.prototxt"
    path.write_text(
        """force_backward: true
        layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 } } }
        layer { name: "ip" type: "InnerProduct" bottom: "x" top: "ip_blob"
                inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 1 } } }
        layer { name: "act" type: "Sigmoid" bottom: "ip_blob" top: "out" }"""
    )
    net = caffe.Net(str(path), caffe.TEST)
    x = np.random.default_rng(2).normal(size=(2, 3)).astype(np.float32)
    net.blobs["x"].data[...] = x
    out = net.forward(start="ip", end="ip")
    assert set(out) == {"ip_blob"}
    weights, bias = net.params["ip"][0].data, net.params["ip"][1].data
    np.testing.assert_allclose(out["ip_blob"], x @ weights.T + bias, rtol=1e-5)
    top_diff = np.random.default_rng(3).normal(size=(2, 4)).astype(np.float32)
    net.blobs["ip_blob"].diff[...] = top_diff
    diffs = net.backward(start="ip", end="ip")
    assert set(diffs) == {"x"}
    np.testing.assert_allclose(diffs["x"], top_diff @ weights, rtol=1e-5, atol=1e-6)
