"""`main.py export NET OUT.onnx` as a user runs it: the file, its names, its weights, a free batch,
and the one-line refusal of a type ONNX cannot express."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from google.protobuf import text_format
from onnx_support import build, session

import main as barista
from engine import rng
from engine.net import Net
from proto import binaryio, caffe_pb2, textio

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
LENET = str(EXAMPLES / "mnist" / "lenet.prototxt")


def export(capsys, *argv: str) -> tuple[int, str, str]:
    code = barista.main(["export", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_lenet_file_passes_the_checker_and_carries_blob_names_and_weights(capsys, tmp_path):
    trained = build(textio.read_net(LENET), seed=7)
    for layer in trained.layers:
        for blob in layer.blobs:
            blob.data[...] = np.random.default_rng(1).standard_normal(blob.shape) * 0.1
    weights = tmp_path / "lenet.caffemodel"
    binaryio.write_caffemodel(weights, trained.to_proto())
    out = tmp_path / "lenet.onnx"
    code, stdout, stderr = export(capsys, LENET, str(out), "--weights", str(weights))
    assert code == 0, stderr
    assert "opset 18" in stdout and "inputs data, outputs prob" in stdout
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["data"] and [o.name for o in model.graph.output] == [
        "prob"
    ]
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [64, 1, 28, 28]
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    np.testing.assert_array_equal(inits["conv1/0"], trained.layer_by_name("conv1").blobs[0].data)
    x = np.random.default_rng(2).standard_normal((64, 1, 28, 28)).astype(np.float32)
    trained.blob_by_name("data").data[...] = x
    trained.forward()
    (prob,) = session(model).run(None, {"data": x})
    np.testing.assert_allclose(prob, trained.blob_by_name("prob").data, rtol=1e-5, atol=1e-6)


def test_without_weights_the_fillers_seeded_values_are_exported(capsys, tmp_path):
    model_path = str(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    param = textio.read_net(model_path)
    param.layer.remove(param.layer[0])  # the data layers need their LMDBs: an Input stands for them
    param.layer.remove(param.layer[0])
    param.layer.insert(0, textio.parse_net(
        'layer { name: "data" type: "Input" top: "data" top: "label" '
        "input_param { shape { dim: 3 dim: 1 dim: 28 dim: 28 } shape { dim: 3 } } }"
    ).layer[0])  # fmt: skip
    net_path = tmp_path / "lenet.prototxt"
    net_path.write_text(text_format.MessageToString(param))
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    assert export(capsys, str(net_path), str(a), "--phase", "TRAIN")[0] == 0
    assert export(capsys, str(net_path), str(b), "--phase", "TRAIN")[0] == 0
    assert a.read_bytes() == b.read_bytes()
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(str(a)).graph.initializer}
    with rng.seeded(1):
        net = Net(param, phase=caffe_pb2.TRAIN, xp=np)
    np.testing.assert_array_equal(inits["conv1/0"], net.layer_by_name("conv1").blobs[0].data)
    assert np.any(inits["conv1/0"])


def test_dynamic_batch_runs_at_another_batch(capsys, tmp_path):
    out = tmp_path / "lenet.onnx"
    assert export(capsys, LENET, str(out), "--dynamic-batch")[0] == 0
    model = onnx.load(str(out))
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    x = np.random.default_rng(3).standard_normal((5, 1, 28, 28)).astype(np.float32)
    (prob,) = session(model).run(None, {"data": x})
    assert prob.shape == (5, 10)
    np.testing.assert_allclose(prob.sum(axis=1), 1, rtol=1e-5)


@pytest.mark.parametrize(
    "layer,words",
    [
        (
            'type: "Im2col" convolution_param { kernel_size: 2 }',
            "layer 'odd' (Im2col): this layer type has no ONNX equivalent",
        ),
        (
            'type: "Pooling" pooling_param { pool: STOCHASTIC kernel_size: 2 }',
            "layer 'odd' (Pooling): STOCHASTIC",
        ),
    ],
)
def test_a_type_onnx_cannot_express_is_refused_in_one_line(capsys, tmp_path, layer, words):
    net = tmp_path / "net.prototxt"
    net.write_text(
        'layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 2 dim: 4 dim: 4 } } }\n'
        f'layer {{ name: "odd" {layer} bottom: "x" top: "y" }}'
    )
    out = tmp_path / "net.onnx"
    code, _, err = export(capsys, str(net), str(out), "--phase", "TRAIN")
    assert code == 2 and err.count("\n") == 1 and words in err, err
    assert not out.exists()
