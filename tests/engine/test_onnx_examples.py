"""Every example net exported to ONNX and run in onnxruntime agrees with the engine's forward pass on
every blob, within 1e-5 of each blob's magnitude; the exported file passes onnx.checker."""

from __future__ import annotations

from pathlib import Path

import lmdb
import numpy as np
import pytest
from onnx_support import assert_agree, build, compare, randomize

from engine.export.onnx_walk import build_graph
from engine.export.onnx_write import to_model
from proto import caffe_pb2, textio

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
# Batch 2 instead of the files' 10 to 64: the same graph, a fraction of the time.
INPUT_NETS = [
    "mnist/lenet.prototxt", "caffenet.prototxt", "inception.prototxt", "resnet.prototxt", "fcn.prototxt",
    "siamese.prototxt", "legacy/lenet_v1.prototxt",
]  # fmt: skip


@pytest.mark.parametrize("name", INPUT_NETS)
def test_example_net_agrees_with_the_engine(name):
    net = randomize(build(textio.read_net(EXAMPLES / name), batch=2))
    results = compare(net)
    assert len(results) > 3
    assert_agree(results)


def test_mlp_on_dummy_data_agrees_in_train_phase():
    net = build(textio.read_net(EXAMPLES / "mlp.prototxt"), phase=caffe_pb2.TRAIN)
    results = compare(net)
    assert "loss" in results and results["loss"][1] > 0
    assert_agree(results)


def _mnist_like_lmdb(path: Path, n: int = 6) -> str:
    images = np.random.default_rng(0).integers(0, 256, (n, 1, 28, 28)).astype(np.uint8)
    env = lmdb.open(str(path), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for i in range(n):
            datum = caffe_pb2.Datum(channels=1, height=28, width=28, data=images[i].tobytes(), label=i % 10)
            txn.put(b"%08d" % i, datum.SerializeToString())
    env.close()
    return str(path)


@pytest.mark.parametrize("phase", [caffe_pb2.TRAIN, caffe_pb2.TEST])
def test_lenet_with_data_layers_agrees(tmp_path, phase):
    """The Data layers' tops (data, label) become graph inputs; the loss and accuracy are computed."""
    param = textio.read_net(EXAMPLES / "mnist/lenet_train_test.prototxt")
    source = _mnist_like_lmdb(tmp_path / "mnist_lmdb")
    for layer in param.layer:
        if layer.type == "Data":
            layer.data_param.source = source
            layer.data_param.batch_size = 4
    results = compare(build(param, phase=phase))
    assert "loss" in results and ("accuracy" in results) == (phase == caffe_pb2.TEST)
    assert_agree(results)


@pytest.mark.parametrize("name", ["fcn.prototxt", "siamese.prototxt", "inception.prototxt"])
def test_example_net_with_a_free_batch_runs_at_another_batch(name):
    net = randomize(build(textio.read_net(EXAMPLES / name), batch=2))
    results = compare(net, dynamic_batch=True, batch=3)
    assert all(want.shape[:1] == (3,) for _, want in results.values() if want.ndim)
    assert_agree(results)


def test_shared_weights_are_one_initializer():
    """siamese.prototxt's two towers share their parameters by name: the model holds them once."""
    net = build(textio.read_net(EXAMPLES / "siamese.prototxt"), batch=2)
    model = to_model(build_graph(net), net.name)
    names = [t.name for t in model.graph.initializer]
    owned = [f"{layer}/{i}" for layer in ("conv1", "conv2", "ip1", "ip2", "feat") for i in (0, 1)]
    assert set(owned) <= set(names)
    assert not any(n.endswith("_p/0") or n.endswith("_p/1") for n in names), names
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    assert len(convs) == 4 and {n.input[1] for n in convs} == {"conv1/0", "conv2/0"}
