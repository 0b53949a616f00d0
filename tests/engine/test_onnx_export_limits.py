"""Issue 32 case 10, the ONNX parts: a model past protobuf's 2 GiB said "failed onnx.checker: Failed to
serialize proto", and Power with ``power: -1 scale: 0`` said the same (Python's ``0.0 ** -1`` raised
inside the mapping). Now the size is refused in words before the model is built, and the Power layer
exports Caffe's constant (C's pow: 0^-1 = inf)."""

from __future__ import annotations

import numpy as np
import pytest

import main as barista
from engine import rng
from engine.export import onnx_write
from engine.net import Net
from proto import textio

ort = pytest.importorskip("onnxruntime")

NET = """name: "pow"
layer {{ name: "data" type: "Input" top: "data" input_param {{ shape {{ dim: 2 dim: 3 }} }} }}
layer {{ name: "p" type: "Power" bottom: "data" top: "p" power_param {{ {power} }} }}
"""


@pytest.mark.parametrize(
    "power", ["power: -1 scale: 0", "power: 0.5 scale: 0 shift: -2", "power: 2 scale: 0 shift: 3"]
)
def test_a_power_layer_that_ignores_its_input_exports_caffes_constant(tmp_path, capsys, power):
    path = tmp_path / "pow.prototxt"
    path.write_text(NET.format(power=power))
    assert barista.main(["export", str(path), str(tmp_path / "pow.onnx")]) == 0, capsys.readouterr().err
    with rng.seeded(1):
        net = Net(textio.read_net(str(path)), phase=1, xp=np)
    net.blob_by_name("data").data[...] = 1.0
    with np.errstate(divide="ignore", invalid="ignore"):  # the engine's own pow(0, -1), as Caffe's
        net.forward()
    expected = net.blob_by_name("p").data
    got = ort.InferenceSession(str(tmp_path / "pow.onnx")).run(None, {"data": np.ones((2, 3), np.float32)})[0]
    # One constant, C's pow of two float32 on both sides (inf, nan, 9): no arithmetic to differ by.
    np.testing.assert_array_equal(got, expected)


def test_weights_past_what_one_onnx_file_holds_are_refused_in_words(tmp_path, capsys, monkeypatch):
    path = tmp_path / "ip.prototxt"
    path.write_text(
        'layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 100 } } }\n'
        'layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"\n'
        "  inner_product_param { num_output: 100 } }\n"
    )
    monkeypatch.setattr(onnx_write, "MAX_WEIGHT_BYTES", 10_000)  # 40,400 bytes of weights: over
    assert barista.main(["export", str(path), str(tmp_path / "ip.onnx")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {path}: the weights take 39.5 KiB, more than one ONNX file can hold (protobuf caps a "
        "file at 2 GiB); the PyTorch module (OUT.py) has no such limit"
    ]
    assert not (tmp_path / "ip.onnx").exists()
