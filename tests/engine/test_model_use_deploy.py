"""The deploy net derived from a train_val net (engine/model_use/deploy.py, `main.py deploy`):
shapes layer by layer equal those of the deploy nets Caffe ships for LeNet, CIFAR-10 quick,
CaffeNet and GoogLeNet (their facts written here where the repository has no such file)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import main
from engine.model_use import deploy
from engine.netstate import filter_net
from graph_view.shapes import infer
from proto import caffe_pb2, textio
from proto.binaryio import write_blob

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "resources" / "examples"


def shapes(net: caffe_pb2.NetParameter) -> dict[str, tuple[int, ...]]:
    """Every blob's shape (last writer wins), from the engine's own layer set-up."""
    test = filter_net(net, caffe_pb2.NetState(phase=caffe_pb2.TEST))
    out: dict[str, tuple[int, ...]] = {}
    for layer, result in zip(test.layer, infer(list(test.layer), caffe_pb2.TEST)):
        assert result.error is None, f"{layer.name}: {result.error}"
        out.update(zip(layer.top, result.tops))
    return out


def types(net: caffe_pb2.NetParameter) -> list[tuple[str, str]]:
    return [(l.name, l.type) for l in net.layer]


def test_lenet_equals_the_shipped_deploy_net() -> None:
    # lenet.prototxt is Caffe's hand-written deploy net: Input 64x1x28x28 ... Softmax prob.
    train_val = textio.read_net(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    derived = deploy.derive(train_val, EXAMPLES / "mnist" / "lenet_train_test.prototxt", (64, 1, 28, 28))
    shipped = textio.read_net(EXAMPLES / "mnist" / "lenet.prototxt")
    assert shapes(derived.net) == shapes(shipped)
    assert [t for _, t in types(derived.net)] == [t for _, t in types(shipped)]
    assert derived.output == "prob" and derived.inputs == {"data": (64, 1, 28, 28)}
    # The transform travels on the Input layer; Caffe's Input ignores it.
    assert derived.net.layer[0].transform_param.scale == pytest.approx(1 / 256)


def test_lenet_default_batch_is_one() -> None:
    path = EXAMPLES / "mnist" / "lenet_train_test.prototxt"
    derived = deploy.derive(textio.read_net(path), path)
    assert shapes(derived.net)["data"] == (1, 1, 28, 28)
    assert shapes(derived.net)["prob"] == (1, 10)


CIFAR_QUICK = """
name: "CIFAR10_quick"
layer { name: "cifar" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  transform_param { mean_file: "mean.binaryproto" }
  data_param { source: "cifar10_train_lmdb" batch_size: 100 backend: LMDB } }
layer { name: "cifar" type: "Data" top: "data" top: "label" include { phase: TEST }
  transform_param { mean_file: "mean.binaryproto" }
  data_param { source: "cifar10_test_lmdb" batch_size: 100 backend: LMDB } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 32 pad: 2 kernel_size: 5 stride: 1 } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "relu1" type: "ReLU" bottom: "pool1" top: "pool1" }
layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
  convolution_param { num_output: 32 pad: 2 kernel_size: 5 stride: 1 } }
layer { name: "relu2" type: "ReLU" bottom: "conv2" top: "conv2" }
layer { name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
  pooling_param { pool: AVE kernel_size: 3 stride: 2 } }
layer { name: "conv3" type: "Convolution" bottom: "pool2" top: "conv3"
  convolution_param { num_output: 64 pad: 2 kernel_size: 5 stride: 1 } }
layer { name: "relu3" type: "ReLU" bottom: "conv3" top: "conv3" }
layer { name: "pool3" type: "Pooling" bottom: "conv3" top: "pool3"
  pooling_param { pool: AVE kernel_size: 3 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool3" top: "ip1" inner_product_param { num_output: 64 } }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2" inner_product_param { num_output: 10 } }
layer { name: "accuracy" type: "Accuracy" bottom: "ip2" bottom: "label" top: "accuracy"
  include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
"""

# Caffe's cifar10_quick.prototxt: Input 1x3x32x32; conv1 32@32, pool1 32@16, conv2 32@16, pool2 32@8,
# conv3 64@8, pool3 64@4, ip1 64, ip2 10, prob 10.
CIFAR_QUICK_DEPLOY = {
    "data": (1, 3, 32, 32), "conv1": (1, 32, 32, 32), "pool1": (1, 32, 16, 16), "conv2": (1, 32, 16, 16),
    "pool2": (1, 32, 8, 8), "conv3": (1, 64, 8, 8), "pool3": (1, 64, 4, 4), "ip1": (1, 64), "ip2": (1, 10),
    "prob": (1, 10),
}  # fmt: skip
CIFAR_QUICK_DEPLOY_LAYERS = [
    "Input", "Convolution", "Pooling", "ReLU", "Convolution", "ReLU", "Pooling", "Convolution", "ReLU",
    "Pooling", "InnerProduct", "InnerProduct", "Softmax",
]  # fmt: skip


def test_cifar10_quick_equals_caffes_deploy_facts_and_carries_its_mean(tmp_path: Path) -> None:
    net_dir, out_dir = tmp_path / "cifar", tmp_path / "out"
    net_dir.mkdir()
    out_dir.mkdir()
    blob = caffe_pb2.BlobProto()
    blob.shape.dim.extend([1, 3, 32, 32])
    blob.data.extend(np.zeros(3 * 32 * 32))
    write_blob(net_dir / "mean.binaryproto", blob)  # the LMDBs are absent: the mean file gives 3x32x32
    (net_dir / "train_test.prototxt").write_text(CIFAR_QUICK)
    code = main.main(["deploy", str(net_dir / "train_test.prototxt"), str(out_dir / "deploy.prototxt")])
    assert code == 0
    derived = textio.read_net(out_dir / "deploy.prototxt")
    assert shapes(derived) == CIFAR_QUICK_DEPLOY
    assert [t for _, t in types(derived)] == CIFAR_QUICK_DEPLOY_LAYERS
    # The mean file is named relative to the deploy net's folder, so it is found from there.
    mean = derived.layer[0].transform_param.mean_file
    assert mean == "../cifar/mean.binaryproto"
    assert (out_dir / mean).resolve() == (net_dir / "mean.binaryproto").resolve()


def caffenet_train_val() -> str:
    """The CaffeNet example with BVLC train_val's data layers (crop 227, 3 mean values) instead of
    its Input; the LMDBs are absent, so the shapes come from the layer's fields."""
    text = (EXAMPLES / "caffenet.prototxt").read_text()
    data = """
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  transform_param { mirror: true crop_size: 227 mean_value: 104 mean_value: 117 mean_value: 123 }
  data_param { source: "ilsvrc12_train_lmdb" batch_size: 256 backend: LMDB } }
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TEST }
  transform_param { mirror: false crop_size: 227 mean_value: 104 mean_value: 117 mean_value: 123 }
  data_param { source: "ilsvrc12_val_lmdb" batch_size: 50 backend: LMDB } }
"""
    text, count = re.subn(r'layer \{\s*name: "input"\s*type: "Input".*?\n\}\n', data, text, flags=re.S)
    assert count == 1
    return text


def test_caffenet_equals_bvlc_deploy_facts() -> None:
    derived = deploy.derive(textio.parse_net(caffenet_train_val()), None, (10, 3, 227, 227))
    got = shapes(derived.net)
    # BVLC's bvlc_reference_caffenet/deploy.prototxt: Input 10x3x227x227 ... fc8 10x1000, prob 10x1000.
    assert got["data"] == (10, 3, 227, 227)
    assert got["pool5"] == (10, 256, 6, 6) and got["fc6"] == (10, 4096)
    assert got["fc8"] == (10, 1000) and got["prob"] == (10, 1000)
    # Every other blob is as the example net (whose Input is also 10x3x227x227) gives it.
    example = shapes(textio.read_net(EXAMPLES / "caffenet.prototxt"))
    assert {k: v for k, v in got.items() if k != "prob"} == {
        k: v for k, v in example.items() if k not in ("label", "loss", "accuracy")
    }
    assert {t for _, t in types(derived.net)}.isdisjoint({"Data", "Accuracy", "SoftmaxWithLoss"})
    transform = derived.net.layer[0].transform_param
    assert transform.crop_size == 227 and list(transform.mean_value) == [104, 117, 123]
    assert not transform.mirror


def test_googlenet_style_net() -> None:
    path = EXAMPLES / "inception.prototxt"
    derived = deploy.derive(textio.read_net(path), path, (10, 3, 224, 224))
    got = shapes(derived.net)
    # BVLC's bvlc_googlenet/deploy.prototxt: Input 10x3x224x224, prob 10x1000.
    assert got["data"] == (10, 3, 224, 224) and got["prob"] == (10, 1000)
    assert [l.name for l in derived.net.layer if l.type in ("Accuracy", "SoftmaxWithLoss")] == []


AUX_HEADS = """
name: "aux"
layer { name: "data" type: "Input" top: "data" top: "label"
  input_param { shape { dim: 8 dim: 3 dim: 16 dim: 16 } shape { dim: 8 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 4 kernel_size: 3 } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "loss1/pool" type: "Pooling" bottom: "conv" top: "loss1/pool"
  pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
layer { name: "loss1/fc" type: "InnerProduct" bottom: "loss1/pool" top: "loss1/fc"
  inner_product_param { num_output: 5 } }
layer { name: "loss1/relu" type: "ReLU" bottom: "loss1/fc" top: "loss1/fc" }
layer { name: "loss1/classifier" type: "InnerProduct" bottom: "loss1/fc" top: "loss1/classifier"
  inner_product_param { num_output: 3 } }
layer { name: "loss1/loss" type: "SoftmaxWithLoss" bottom: "loss1/classifier" bottom: "label"
  top: "loss1/loss1" loss_weight: 0.3 }
layer { name: "loss1/top-1" type: "Accuracy" bottom: "loss1/classifier" bottom: "label" top: "loss1/top-1"
  include { phase: TEST } }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "classifier" type: "InnerProduct" bottom: "pool" top: "classifier"
  inner_product_param { num_output: 3 } }
layer { name: "loss3/loss3" type: "SoftmaxWithLoss" bottom: "classifier" bottom: "label" top: "loss3"
  loss_weight: 1 }
layer { name: "loss3/top-5" type: "Accuracy" bottom: "classifier" bottom: "label" top: "top5"
  accuracy_param { top_k: 2 } }
"""


def test_auxiliary_heads_go_with_the_layers_only_they_read() -> None:
    # As BVLC's GoogLeNet deploy net leaves out loss1/* and loss2/*.
    derived = deploy.derive(textio.parse_net(AUX_HEADS), None)
    assert [n for n, _ in types(derived.net)] == ["data", "conv", "relu", "pool", "classifier", "prob"]
    assert shapes(derived.net)["prob"] == (1, 3)
    assert "loss1/loss" in derived.notes[0]


def test_a_layer_reading_a_loss_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    text = AUX_HEADS + 'layer { name: "scaled" type: "Power" bottom: "loss3" top: "scaled" }\n'
    path = tmp_path / "net.prototxt"
    path.write_text(text)
    assert main.main(["deploy", str(path), str(tmp_path / "d.prototxt")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "layer 'scaled' reads 'loss3'" in err
    assert not (tmp_path / "d.prototxt").exists()


def test_a_label_a_kept_layer_reads_stays_an_input() -> None:
    text = AUX_HEADS + 'layer { name: "echo" type: "Power" bottom: "label" top: "echo" }\n'
    derived = deploy.derive(textio.parse_net(text), None)
    assert derived.inputs == {"data": (1, 3, 16, 16), "label": (1,)}


def test_an_unknown_data_shape_asks_for_input_shape(tmp_path: Path, capsys) -> None:
    path = tmp_path / "net.prototxt"
    path.write_text(
        'layer { name: "d" type: "Data" top: "data" top: "label"\n'
        '  data_param { source: "absent" batch_size: 4 } }\n'
        'layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"\n'
        "  inner_product_param { num_output: 2 } }\n"
        'layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }\n'
    )
    assert main.main(["deploy", str(path), str(tmp_path / "d.prototxt")]) == 2
    assert "--input-shape" in capsys.readouterr().err
    assert main.main(["deploy", str(path), str(tmp_path / "d.prototxt"), "--input-shape", "2,3,5,5"]) == 0
    assert shapes(textio.read_net(tmp_path / "d.prototxt"))["prob"] == (2, 2)
