"""Nets written for these tests, shaped like the ones people download: BVLC GoogLeNet's train_val
(an ImageNet LMDB that is not here, crop_size 224, three mean_values, batch 32, inception modules,
an auxiliary classifier) and CIFAR-10's quick train_test (a mean file and LMDBs that are not here,
batch 100, 32x32 colour images), with the deploy nets that sit beside them."""

from __future__ import annotations

from pathlib import Path


def _conv(name: str, bottom: str, out: int, kernel: int, stride: int = 1, pad: int = 0) -> str:
    return (
        f'layer {{ name: "{name}" type: "Convolution" bottom: "{bottom}" top: "{name}"\n'
        f"  param {{ lr_mult: 1 decay_mult: 1 }} param {{ lr_mult: 2 decay_mult: 0 }}\n"
        f"  convolution_param {{ num_output: {out} kernel_size: {kernel} stride: {stride} pad: {pad}\n"
        f'    weight_filler {{ type: "xavier" }} bias_filler {{ type: "constant" value: 0.2 }} }} }}\n'
        f'layer {{ name: "{name}_relu" type: "ReLU" bottom: "{name}" top: "{name}" }}\n'
    )


def _pool(name: str, bottom: str, pool: str, kernel: int, stride: int, pad: int = 0) -> str:
    return (
        f'layer {{ name: "{name}" type: "Pooling" bottom: "{bottom}" top: "{name}"\n'
        f"  pooling_param {{ pool: {pool} kernel_size: {kernel} stride: {stride} pad: {pad} }} }}\n"
    )


def _inception(name: str, bottom: str, n1: int, r3: int, n3: int, r5: int, n5: int, proj: int) -> str:
    p = f"inception_{name}"
    return (
        _conv(f"{p}/1x1", bottom, n1, 1)
        + _conv(f"{p}/3x3_reduce", bottom, r3, 1)
        + _conv(f"{p}/3x3", f"{p}/3x3_reduce", n3, 3, pad=1)
        + _conv(f"{p}/5x5_reduce", bottom, r5, 1)
        + _conv(f"{p}/5x5", f"{p}/5x5_reduce", n5, 5, pad=2)
        + _pool(f"{p}/pool", bottom, "MAX", 3, 1, 1)
        + _conv(f"{p}/pool_proj", f"{p}/pool", proj, 1)
        + f'layer {{ name: "{p}/output" type: "Concat" bottom: "{p}/1x1" bottom: "{p}/3x3"\n'
        f'  bottom: "{p}/5x5" bottom: "{p}/pool_proj" top: "{p}/output" }}\n'
    )


def _googlenet_body() -> str:
    return (
        _conv("conv1/7x7_s2", "data", 64, 7, 2, 3)
        + _pool("pool1/3x3_s2", "conv1/7x7_s2", "MAX", 3, 2)
        + 'layer { name: "pool1/norm1" type: "LRN" bottom: "pool1/3x3_s2" top: "pool1/norm1"\n'
        "  lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 } }\n"
        + _conv("conv2/3x3_reduce", "pool1/norm1", 64, 1)
        + _conv("conv2/3x3", "conv2/3x3_reduce", 192, 3, pad=1)
        + _pool("pool2/3x3_s2", "conv2/3x3", "MAX", 3, 2)
        + _inception("3a", "pool2/3x3_s2", 64, 96, 128, 16, 32, 32)
        + _inception("3b", "inception_3a/output", 128, 128, 192, 32, 96, 64)
        + _pool("pool3/3x3_s2", "inception_3b/output", "MAX", 3, 2)
        + _inception("4a", "pool3/3x3_s2", 192, 96, 208, 16, 48, 64)
    )


def _googlenet_head(train: bool) -> str:
    head = (
        _pool("pool5/7x7_s1", "inception_4a/output", "AVE", 14, 1)
        + 'layer { name: "pool5/drop_7x7_s1" type: "Dropout" bottom: "pool5/7x7_s1" top: "pool5/7x7_s1"\n'
        "  dropout_param { dropout_ratio: 0.4 } }\n"
        'layer { name: "loss3/classifier" type: "InnerProduct" bottom: "pool5/7x7_s1"\n'
        '  top: "loss3/classifier"\n'
        '  inner_product_param { num_output: 1000 weight_filler { type: "xavier" } } }\n'
    )
    if not train:
        return head + 'layer { name: "prob" type: "Softmax" bottom: "loss3/classifier" top: "prob" }\n'
    aux = (
        _pool("loss1/ave_pool", "inception_4a/output", "AVE", 5, 3)
        + _conv("loss1/conv", "loss1/ave_pool", 128, 1)
        + 'layer { name: "loss1/fc" type: "InnerProduct" bottom: "loss1/conv" top: "loss1/fc"\n'
        '  inner_product_param { num_output: 1024 weight_filler { type: "xavier" } } }\n'
        'layer { name: "loss1/classifier" type: "InnerProduct" bottom: "loss1/fc" top: "loss1/classifier"\n'
        '  inner_product_param { num_output: 1000 weight_filler { type: "xavier" } } }\n'
        'layer { name: "loss1/loss" type: "SoftmaxWithLoss" bottom: "loss1/classifier" bottom: "label"\n'
        '  top: "loss1/loss1" loss_weight: 0.3 }\n'
    )
    return (
        aux
        + head
        + 'layer { name: "loss3/loss3" type: "SoftmaxWithLoss" bottom: "loss3/classifier" bottom: "label"\n'
        '  top: "loss3/loss3" loss_weight: 1 }\n'
        'layer { name: "loss3/top-1" type: "Accuracy" bottom: "loss3/classifier" bottom: "label"\n'
        '  top: "loss3/top-1" include { phase: TEST } }\n'
    )


def _imagenet_data(phase: str, source: str, batch: int, mirror: str) -> str:
    return (
        f'layer {{ name: "data" type: "Data" top: "data" top: "label" include {{ phase: {phase} }}\n'
        f"  transform_param {{ mirror: {mirror} crop_size: 224\n"
        "    mean_value: 104 mean_value: 117 mean_value: 123 }\n"
        f'  data_param {{ source: "{source}" batch_size: {batch} backend: LMDB }} }}\n'
    )


GOOGLENET_TRAIN_VAL = (
    'name: "GoogleNet"\n'
    + _imagenet_data("TRAIN", "examples/imagenet/ilsvrc12_train_lmdb", 32, "true")
    + _imagenet_data("TEST", "examples/imagenet/ilsvrc12_val_lmdb", 50, "false")
    + _googlenet_body()
    + _googlenet_head(train=True)
)

GOOGLENET_DEPLOY = (
    'name: "GoogleNet"\n'
    'layer { name: "data" type: "Input" top: "data"\n'
    "  input_param { shape: { dim: 10 dim: 3 dim: 224 dim: 224 } } }\n"
    + _googlenet_body()
    + _googlenet_head(train=False)
)


def _cifar_data(phase: str, source: str) -> str:
    return (
        f'layer {{ name: "cifar" type: "Data" top: "data" top: "label" include {{ phase: {phase} }}\n'
        '  transform_param { mean_file: "examples/cifar10/mean.binaryproto" }\n'
        f'  data_param {{ source: "{source}" batch_size: 100 backend: LMDB }} }}\n'
    )


def _cifar_body() -> str:
    def conv(name: str, bottom: str, out: int) -> str:
        return (
            f'layer {{ name: "{name}" type: "Convolution" bottom: "{bottom}" top: "{name}"\n'
            f"  param {{ lr_mult: 1 }} param {{ lr_mult: 2 }}\n"
            f"  convolution_param {{ num_output: {out} pad: 2 kernel_size: 5 stride: 1\n"
            '    weight_filler { type: "gaussian" std: 0.0001 } bias_filler { type: "constant" } } }\n'
        )

    def pool(name: str, bottom: str, kind: str) -> str:
        return (
            f'layer {{ name: "{name}" type: "Pooling" bottom: "{bottom}" top: "{name}"\n'
            f"  pooling_param {{ pool: {kind} kernel_size: 3 stride: 2 }} }}\n"
        )

    def relu(name: str, blob: str) -> str:
        return f'layer {{ name: "{name}" type: "ReLU" bottom: "{blob}" top: "{blob}" }}\n'

    return (
        conv("conv1", "data", 32)
        + pool("pool1", "conv1", "MAX")
        + relu("relu1", "pool1")
        + conv("conv2", "pool1", 32)
        + relu("relu2", "conv2")
        + pool("pool2", "conv2", "AVE")
        + conv("conv3", "pool2", 64)
        + relu("relu3", "conv3")
        + pool("pool3", "conv3", "AVE")
        + 'layer { name: "ip1" type: "InnerProduct" bottom: "pool3" top: "ip1"\n'
        '  inner_product_param { num_output: 64 weight_filler { type: "gaussian" std: 0.1 } } }\n'
        'layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"\n'
        '  inner_product_param { num_output: 10 weight_filler { type: "gaussian" std: 0.1 } } }\n'
    )


CIFAR_TRAIN_TEST = (
    'name: "CIFAR10_quick"\n'
    + _cifar_data("TRAIN", "examples/cifar10/cifar10_train_lmdb")
    + _cifar_data("TEST", "examples/cifar10/cifar10_test_lmdb")
    + _cifar_body()
    + 'layer { name: "accuracy" type: "Accuracy" bottom: "ip2" bottom: "label" top: "accuracy"\n'
    "  include { phase: TEST } }\n"
    'layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }\n'
)

# BVLC's cifar10_quick.prototxt still uses the legacy input fields.
CIFAR_DEPLOY = (
    'name: "CIFAR10_quick_test"\ninput: "data"\ninput_shape { dim: 1 dim: 3 dim: 32 dim: 32 }\n'
    + _cifar_body()
    + 'layer { name: "prob" type: "Softmax" bottom: "ip2" top: "prob" }\n'
)

CIFAR_SOLVER = """# As BVLC's: the net's path is relative to the Caffe root, where Caffe's tools run.
net: "examples/cifar10/cifar10_quick_train_test.prototxt"
test_iter: 100
test_interval: 500
base_lr: 0.001
momentum: 0.9
weight_decay: 0.004
lr_policy: "fixed"
display: 100
max_iter: 4000
snapshot: 4000
snapshot_prefix: "examples/cifar10/cifar10_quick"
solver_mode: GPU
"""


def write_googlenet(root: Path, deploy: bool = True) -> Path:
    """``root/models/bvlc_googlenet/train_val.prototxt`` (and deploy.prototxt beside it)."""
    folder = root / "models" / "bvlc_googlenet"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train_val.prototxt").write_text(GOOGLENET_TRAIN_VAL)
    if deploy:
        (folder / "deploy.prototxt").write_text(GOOGLENET_DEPLOY)
    return folder / "train_val.prototxt"


def write_cifar(root: Path, deploy: bool = True) -> Path:
    """``root/examples/cifar10/cifar10_quick_train_test.prototxt``, its solver, and the deploy net."""
    folder = root / "examples" / "cifar10"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cifar10_quick_train_test.prototxt").write_text(CIFAR_TRAIN_TEST)
    (folder / "cifar10_quick_solver.prototxt").write_text(CIFAR_SOLVER)
    if deploy:
        (folder / "cifar10_quick.prototxt").write_text(CIFAR_DEPLOY)
    return folder / "cifar10_quick_train_test.prototxt"
