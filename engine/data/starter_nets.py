"""A starting net and solver sized to a data set, as prototxt text ready for Train.

Small grayscale images get a LeNet (two 5x5 convolutions and poolings, 500 hidden units), small
colour ones the CIFAR-10 "quick" net (three 5x5 convolutions of 32, 32, 64 with 3/2 poolings, 64
hidden units), larger ones an AlexNet without LRN (cropped to 227 at most, mirrored in TRAIN);
images too small for their convolutions get a two-layer perceptron. Every net reads the data
set's train_lmdb (TRAIN) and val_lmdb or test_lmdb (TEST), subtracts its mean, scales to [0, 1)
for the small nets, and ends in num_output = the classes, SoftmaxWithLoss and Accuracy.
"""

from __future__ import annotations

from pathlib import Path

from google.protobuf import text_format

from proto import caffe_pb2

SMALL = 64  # up to this side, the small nets


def _data(dataset: Path, phase: str, batch: int, transform: str) -> str:
    test = dataset / ("val_lmdb" if (dataset / "val_lmdb").is_dir() else "test_lmdb")
    source = dataset / "train_lmdb" if phase == "TRAIN" else test
    mirror = " mirror: true" if phase == "TRAIN" and "crop_size" in transform else ""
    return (
        f'layer {{ name: "data" type: "Data" top: "data" top: "label" include {{ phase: {phase} }}\n'
        f'  transform_param {{ mean_file: "{dataset / "mean.binaryproto"}"{transform}{mirror} }}\n'
        f'  data_param {{ source: "{source}" backend: LMDB batch_size: {batch} }} }}\n'
    )


def _conv(name: str, bottom: str, n: int, k: int, stride: int = 1, pad: int = 0, std: str = "") -> str:
    filler = f'type: "gaussian" std: {std}' if std else 'type: "xavier"'
    return (
        f'layer {{ name: "{name}" type: "Convolution" bottom: "{bottom}" top: "{name}"\n'
        f"  param {{ lr_mult: 1 }} param {{ lr_mult: 2 }}\n"
        f"  convolution_param {{ num_output: {n} kernel_size: {k} stride: {stride} pad: {pad}\n"
        f'    weight_filler {{ {filler} }} bias_filler {{ type: "constant" }} }} }}\n'
    )


def _pool(name: str, bottom: str, kind: str, k: int, stride: int) -> str:
    return (
        f'layer {{ name: "{name}" type: "Pooling" bottom: "{bottom}" top: "{name}"\n'
        f"  pooling_param {{ pool: {kind} kernel_size: {k} stride: {stride} }} }}\n"
    )


def _relu(name: str, blob: str) -> str:
    return f'layer {{ name: "{name}" type: "ReLU" bottom: "{blob}" top: "{blob}" }}\n'


def _ip(name: str, bottom: str, n: int) -> str:
    return (
        f'layer {{ name: "{name}" type: "InnerProduct" bottom: "{bottom}" top: "{name}"\n'
        f"  param {{ lr_mult: 1 }} param {{ lr_mult: 2 }}\n"
        f'  inner_product_param {{ num_output: {n} weight_filler {{ type: "xavier" }} '
        f'bias_filler {{ type: "constant" }} }} }}\n'
    )


def _dropout(name: str, blob: str) -> str:
    return (
        f'layer {{ name: "{name}" type: "Dropout" bottom: "{blob}" top: "{blob}" '
        "dropout_param { dropout_ratio: 0.5 } }\n"
    )


def _head(bottom: str) -> str:
    return (
        f'layer {{ name: "accuracy" type: "Accuracy" bottom: "{bottom}" bottom: "label" top: "accuracy" '
        "include { phase: TEST } }\n"
        f'layer {{ name: "loss" type: "SoftmaxWithLoss" bottom: "{bottom}" bottom: "label" top: "loss" }}\n'
    )


def choose(channels: int, height: int, width: int) -> str:
    """Which starting net fits images of this shape: lenet, cifar10_quick, alexnet or mlp."""
    side = min(height, width)
    if max(height, width) > SMALL and side >= 67:
        return "alexnet"
    if channels == 1 and side >= 16:
        return "lenet"
    if side >= 5:
        return "cifar10_quick"
    return "mlp"


def starter_net(dataset: Path, channels: int, height: int, width: int, classes: int) -> tuple[str, str]:
    """(net prototxt, solver prototxt) for the data set folder ``dataset``."""
    kind = choose(channels, height, width)
    scale = " scale: 0.00390625"
    if kind == "alexnet":
        crop = min(227, height, width)
        data = _data(dataset, "TRAIN", 32, f" crop_size: {crop}") + _data(
            dataset, "TEST", 25, f" crop_size: {crop}"
        )
        body = (
            _conv("conv1", "data", 96, 11, 4, std="0.01") + _relu("relu1", "conv1")
            + _pool("pool1", "conv1", "MAX", 3, 2)
            + _conv("conv2", "pool1", 256, 5, 1, 2, "0.01") + _relu("relu2", "conv2")
            + _pool("pool2", "conv2", "MAX", 3, 2)
            + _conv("conv3", "pool2", 384, 3, 1, 1, "0.01") + _relu("relu3", "conv3")
            + _conv("conv4", "conv3", 384, 3, 1, 1, "0.01") + _relu("relu4", "conv4")
            + _conv("conv5", "conv4", 256, 3, 1, 1, "0.01") + _relu("relu5", "conv5")
            + _pool("pool5", "conv5", "MAX", 3, 2)
            + _ip("fc6", "pool5", 1024) + _relu("relu6", "fc6") + _dropout("drop6", "fc6")
            + _ip("fc7", "fc6", 1024) + _relu("relu7", "fc7") + _dropout("drop7", "fc7")
            + _ip("fc8", "fc7", classes) + _head("fc8")
        )  # fmt: skip
        lr, policy = 0.01, 'lr_policy: "step" gamma: 0.1 stepsize: 20000'
        batch_test = 25
    elif kind == "lenet":
        data = _data(dataset, "TRAIN", 64, scale) + _data(dataset, "TEST", 100, scale)
        body = (
            _conv("conv1", "data", 20, 5) + _pool("pool1", "conv1", "MAX", 2, 2)
            + _conv("conv2", "pool1", 50, 5) + _pool("pool2", "conv2", "MAX", 2, 2)
            + _ip("ip1", "pool2", 500) + _relu("relu1", "ip1") + _ip("ip2", "ip1", classes) + _head("ip2")
        )  # fmt: skip
        lr, policy = 0.01, 'lr_policy: "inv" gamma: 0.0001 power: 0.75'
        batch_test = 100
    elif kind == "cifar10_quick":
        data = _data(dataset, "TRAIN", 100, scale) + _data(dataset, "TEST", 100, scale)
        body = (
            _conv("conv1", "data", 32, 5, 1, 2, "0.0001") + _pool("pool1", "conv1", "MAX", 3, 2)
            + _relu("relu1", "pool1")
            + _conv("conv2", "pool1", 32, 5, 1, 2, "0.01") + _relu("relu2", "conv2")
            + _pool("pool2", "conv2", "AVE", 3, 2)
            + _conv("conv3", "pool2", 64, 5, 1, 2, "0.01") + _relu("relu3", "conv3")
            + _pool("pool3", "conv3", "AVE", 3, 2)
            + _ip("ip1", "pool3", 64) + _ip("ip2", "ip1", classes) + _head("ip2")
        )  # fmt: skip
        lr, policy = 0.001, 'lr_policy: "fixed"'
        batch_test = 100
    else:
        data = _data(dataset, "TRAIN", 64, scale) + _data(dataset, "TEST", 100, scale)
        body = _ip("ip1", "data", 128) + _relu("relu1", "ip1") + _ip("ip2", "ip1", classes) + _head("ip2")
        lr, policy = 0.01, 'lr_policy: "inv" gamma: 0.0001 power: 0.75'
        batch_test = 100
    net = f'name: "{dataset.name}_{kind}"\n' + data + body
    solver = (
        f"test_iter: {max(1, _test_images(dataset) // batch_test)} test_interval: 500\n"
        f"base_lr: {lr} momentum: 0.9 weight_decay: 0.0005 {policy}\n"
        'display: 100 max_iter: 10000 snapshot: 5000 snapshot_prefix: "snapshots/' + dataset.name + '"\n'
    )
    text_format.Parse(net, caffe_pb2.NetParameter())  # what we write always parses
    text_format.Parse(solver, caffe_pb2.SolverParameter())
    return net, solver


def _test_images(dataset: Path) -> int:
    import json

    try:
        counts = json.loads((dataset / "dataset.json").read_text("utf-8"))["counts"]
    except (OSError, ValueError, KeyError):
        return 100
    split = "val" if "val" in counts else "test"
    return sum(counts.get(split, {}).values()) or 100
