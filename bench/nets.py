"""The nets of bench.cpu_nets as prototxt text, each fed by an Input layer (data and label).

CIFAR-10 quick and CaffeNet follow Caffe's examples/cifar10/cifar10_quick_train_test.prototxt and
models/bvlc_reference_caffenet/train_val.prototxt layer for layer (the Data layers replaced);
the ResNet-18-style net is ours: the layout of He et al.'s ResNet-18 (7x7/2 conv, 3x3/2 max pool,
four stages of two basic blocks with 64-512 channels, 1x1/2 projections, global average pool, fc
1000) in Caffe's words (Convolution without bias, BatchNorm + Scale, ReLU, Eltwise SUM); GoogLeNet is
the layout of models/bvlc_googlenet without its two auxiliary heads (nine inception modules, LRN in the
stem, global average pooling, dropout 0.4, fc 1000).

    python -m bench.nets DIR      writes DIR/cifar10_quick.prototxt, caffenet.prototxt, resnet18.prototxt
"""

from __future__ import annotations

import sys
from pathlib import Path

FILL = 'weight_filler { type: "gaussian" std: 0.01 } bias_filler { type: "constant" }'
MSRA = 'weight_filler { type: "msra" }'


def input_layer(batch: int, channels: int, size: int) -> str:
    return (
        'layer { name: "data" type: "Input" top: "data" top: "label" input_param { '
        f"shape {{ dim: {batch} dim: {channels} dim: {size} dim: {size} }} shape {{ dim: {batch} }} }} }}\n"
    )


def conv(
    name: str, bottom: str, out: int, k: int, stride: int = 1, pad: int = 0, group: int = 1, bias: bool = True
) -> str:
    extra = (f" stride: {stride}" if stride > 1 else "") + (f" pad: {pad}" if pad else "")
    extra += f" group: {group}" if group > 1 else ""
    fill = FILL if bias else f"bias_term: false {MSRA}"
    return (
        f'layer {{ name: "{name}" type: "Convolution" bottom: "{bottom}" top: "{name}" '
        f"convolution_param {{ num_output: {out} kernel_size: {k}{extra} {fill} }} }}\n"
    )


def pool(name: str, bottom: str, method: str, k: int, stride: int) -> str:
    return (
        f'layer {{ name: "{name}" type: "Pooling" bottom: "{bottom}" top: "{name}" '
        f"pooling_param {{ pool: {method} kernel_size: {k} stride: {stride} }} }}\n"
    )


def relu(name: str, blob: str) -> str:
    return f'layer {{ name: "{name}" type: "ReLU" bottom: "{blob}" top: "{blob}" }}\n'


def fc(name: str, bottom: str, out: int) -> str:
    return (
        f'layer {{ name: "{name}" type: "InnerProduct" bottom: "{bottom}" top: "{name}" '
        f"inner_product_param {{ num_output: {out} {FILL} }} }}\n"
    )


def lrn(name: str, bottom: str) -> str:
    return (
        f'layer {{ name: "{name}" type: "LRN" bottom: "{bottom}" top: "{name}" '
        "lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 } }\n"
    )


def dropout(name: str, blob: str) -> str:
    return (
        f'layer {{ name: "{name}" type: "Dropout" bottom: "{blob}" top: "{blob}" '
        "dropout_param { dropout_ratio: 0.5 } }\n"
    )


def loss(bottom: str) -> str:
    return (
        f'layer {{ name: "loss" type: "SoftmaxWithLoss" bottom: "{bottom}" bottom: "label" top: "loss" }}\n'
    )


def cifar10_quick(batch: int = 100) -> str:
    return (
        'name: "CIFAR10_quick"\n'
        + input_layer(batch, 3, 32)
        + conv("conv1", "data", 32, 5, pad=2)
        + pool("pool1", "conv1", "MAX", 3, 2)
        + relu("relu1", "pool1")
        + conv("conv2", "pool1", 32, 5, pad=2)
        + relu("relu2", "conv2")
        + pool("pool2", "conv2", "AVE", 3, 2)
        + conv("conv3", "pool2", 64, 5, pad=2)
        + relu("relu3", "conv3")
        + pool("pool3", "conv3", "AVE", 3, 2)
        + fc("ip1", "pool3", 64)
        + fc("ip2", "ip1", 10)
        + loss("ip2")
    )


def caffenet(batch: int = 10) -> str:
    return (
        'name: "CaffeNet"\n'
        + input_layer(batch, 3, 227)
        + conv("conv1", "data", 96, 11, stride=4)
        + relu("relu1", "conv1")
        + pool("pool1", "conv1", "MAX", 3, 2)
        + lrn("norm1", "pool1")
        + conv("conv2", "norm1", 256, 5, pad=2, group=2)
        + relu("relu2", "conv2")
        + pool("pool2", "conv2", "MAX", 3, 2)
        + lrn("norm2", "pool2")
        + conv("conv3", "norm2", 384, 3, pad=1)
        + relu("relu3", "conv3")
        + conv("conv4", "conv3", 384, 3, pad=1, group=2)
        + relu("relu4", "conv4")
        + conv("conv5", "conv4", 256, 3, pad=1, group=2)
        + relu("relu5", "conv5")
        + pool("pool5", "conv5", "MAX", 3, 2)
        + fc("fc6", "pool5", 4096)
        + relu("relu6", "fc6")
        + dropout("drop6", "fc6")
        + fc("fc7", "fc6", 4096)
        + relu("relu7", "fc7")
        + dropout("drop7", "fc7")
        + fc("fc8", "fc7", 1000)
        + loss("fc8")
    )


def conv_bn(name: str, bottom: str, out: int, k: int, stride: int, relu_after: bool = True) -> str:
    text = conv(name, bottom, out, k, stride=stride, pad=k // 2, bias=False)
    text += f'layer {{ name: "{name}_bn" type: "BatchNorm" bottom: "{name}" top: "{name}" }}\n'
    text += (
        f'layer {{ name: "{name}_scale" type: "Scale" bottom: "{name}" top: "{name}" '
        "scale_param { bias_term: true } }\n"
    )
    return text + (relu(f"{name}_relu", name) if relu_after else "")


def basic_block(name: str, bottom: str, out: int, stride: int) -> str:
    text = conv_bn(f"{name}_a", bottom, out, 3, stride)
    text += conv_bn(f"{name}_b", f"{name}_a", out, 3, 1, relu_after=False)
    shortcut = bottom
    if stride > 1:
        text += conv_bn(f"{name}_proj", bottom, out, 1, stride, relu_after=False)
        shortcut = f"{name}_proj"
    text += (
        f'layer {{ name: "{name}" type: "Eltwise" bottom: "{name}_b" bottom: "{shortcut}" top: "{name}" }}\n'
    )
    return text + relu(f"{name}_relu", name)


def resnet18(batch: int = 8, size: int = 224) -> str:
    text = 'name: "ResNet18_style"\n' + input_layer(batch, 3, size) + conv_bn("conv1", "data", 64, 7, 2)
    text += pool("pool1", "conv1", "MAX", 3, 2)
    bottom = "pool1"
    for stage, channels in enumerate((64, 128, 256, 512), start=2):
        for block in (1, 2):
            name = f"res{stage}_{block}"
            text += basic_block(name, bottom, channels, 2 if block == 1 and stage > 2 else 1)
            bottom = name
    text += (
        f'layer {{ name: "pool5" type: "Pooling" bottom: "{bottom}" top: "pool5" '
        "pooling_param { pool: AVE global_pooling: true } }\n"
    )
    return text + fc("fc", "pool5", 1000) + loss("fc")


# GoogLeNet's inception modules: 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool projection (Szegedy et al.)
INCEPTIONS = {
    "3a": (64, 96, 128, 16, 32, 32),
    "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64),
    "4b": (160, 112, 224, 24, 64, 64),
    "4c": (128, 128, 256, 24, 64, 64),
    "4d": (112, 144, 288, 32, 64, 64),
    "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128),
    "5b": (384, 192, 384, 48, 128, 128),
}


def conv_relu(name: str, bottom: str, out: int, k: int, stride: int = 1, pad: int = 0) -> str:
    return conv(name, bottom, out, k, stride=stride, pad=pad) + relu(f"{name}_relu", name)


def inception(name: str, bottom: str) -> str:
    one, reduce3, three, reduce5, five, proj = INCEPTIONS[name]
    at = f"inception_{name}"
    text = conv_relu(f"{at}/1x1", bottom, one, 1)
    text += conv_relu(f"{at}/3x3_reduce", bottom, reduce3, 1) + conv_relu(
        f"{at}/3x3", f"{at}/3x3_reduce", three, 3, pad=1
    )
    text += conv_relu(f"{at}/5x5_reduce", bottom, reduce5, 1) + conv_relu(
        f"{at}/5x5", f"{at}/5x5_reduce", five, 5, pad=2
    )
    text += (
        f'layer {{ name: "{at}/pool" type: "Pooling" bottom: "{bottom}" top: "{at}/pool" '
        "pooling_param { pool: MAX kernel_size: 3 stride: 1 pad: 1 } }\n"
    )
    text += conv_relu(f"{at}/pool_proj", f"{at}/pool", proj, 1)
    branches = " ".join(f'bottom: "{at}/{b}"' for b in ("1x1", "3x3", "5x5", "pool_proj"))
    return text + f'layer {{ name: "{at}/output" type: "Concat" {branches} top: "{at}/output" }}\n'


def googlenet(batch: int = 32) -> str:
    text = 'name: "GoogLeNet"\n' + input_layer(batch, 3, 224)
    text += conv_relu("conv1", "data", 64, 7, stride=2, pad=3) + pool("pool1", "conv1", "MAX", 3, 2)
    text += lrn("norm1", "pool1") + conv_relu("conv2_reduce", "norm1", 64, 1)
    text += conv_relu("conv2", "conv2_reduce", 192, 3, pad=1) + lrn("norm2", "conv2")
    text += pool("pool2", "norm2", "MAX", 3, 2)
    bottom = "pool2"
    for name in INCEPTIONS:
        text += inception(name, bottom)
        bottom = f"inception_{name}/output"
        if name in ("3b", "4e"):
            text += pool(f"pool_{name}", bottom, "MAX", 3, 2)
            bottom = f"pool_{name}"
    text += pool("pool5", bottom, "AVE", 7, 1)
    text += (
        'layer { name: "drop5" type: "Dropout" bottom: "pool5" top: "pool5" '
        "dropout_param { dropout_ratio: 0.4 } }\n"
    )
    return text + fc("classifier", "pool5", 1000) + loss("classifier")


NETS = {"cifar10_quick": cifar10_quick, "caffenet": caffenet, "resnet18": resnet18, "googlenet": googlenet}

if __name__ == "__main__":
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    folder.mkdir(parents=True, exist_ok=True)
    for net_name, make in NETS.items():
        (folder / f"{net_name}.prototxt").write_text(make())
        print(folder / f"{net_name}.prototxt")
