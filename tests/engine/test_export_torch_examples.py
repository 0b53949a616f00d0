"""Every example net exported to PyTorch runs forward and backward as the engine does.

The semantics are checked in float64 (where both agree to ~1e-12, so any difference in rounding,
padding, divisors or gradients would show); the small nets also in float32, within 1e-5 relative.
Deep float32 nets are not compared element by element: their gradients through ReLU kinks and
near-uniform softmaxes differ by the last bits of values that cancel. Inputs are cut to batch 2
and at most 64 pixels, and InnerProducts wider than 256 to 64 outputs, to keep the test short; the
layers and their settings are the examples' own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from torch_export_support import compare

from proto import caffe_pb2, textio

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
NETS = [
    "mnist/lenet.prototxt",
    "mlp.prototxt",
    "siamese.prototxt",
    "fcn.prototxt",
    "caffenet.prototxt",
    "inception.prototxt",
    "resnet.prototxt",
]
SMALL = {"mnist/lenet.prototxt", "mlp.prototxt", "siamese.prototxt", "fcn.prototxt"}


def smaller(path: str) -> caffe_pb2.NetParameter:
    param = textio.read_net(EXAMPLES / path)
    for layer in param.layer:
        for shape in layer.input_param.shape:
            if len(shape.dim):
                shape.dim[0] = min(shape.dim[0], 2)
            for i in range(2, len(shape.dim)):
                shape.dim[i] = min(shape.dim[i], 24 if "fcn" in path else 64)
        if layer.type == "InnerProduct" and layer.inner_product_param.num_output > 256:
            layer.inner_product_param.num_output = 64
    return param


def check(errors: dict[str, float]) -> None:
    assert len(errors) > 2, errors
    bad = {k: v for k, v in errors.items() if not v <= 1e-5}
    assert not bad, bad


@pytest.mark.parametrize("path", NETS)
def test_example_trains_the_same_in_float64(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    check(compare(smaller(path), caffe_pb2.TRAIN, dtype=np.float64, monkeypatch=monkeypatch))


@pytest.mark.parametrize("path", ["resnet.prototxt", "inception.prototxt"])
def test_example_tests_the_same_in_float64(path: str) -> None:
    check(compare(smaller(path), caffe_pb2.TEST, dtype=np.float64))


@pytest.mark.parametrize("path", sorted(SMALL))
def test_small_example_matches_in_float32(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    check(compare(smaller(path), caffe_pb2.TRAIN, monkeypatch=monkeypatch))


def test_lenet_with_its_data_layers_takes_data_and_label_as_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.data import mnist

    monkeypatch.setenv("BARISTA_DATA_ROOT", str(mnist.ensure_mnist()))
    param = textio.read_net(EXAMPLES / "mnist/lenet_train_test.prototxt")
    errors = compare(param, caffe_pb2.TEST, dtype=np.float64)
    assert {"out accuracy", "out loss", "d conv1.weight"} <= set(errors)
    check(errors)
