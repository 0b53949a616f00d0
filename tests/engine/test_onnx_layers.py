"""A parameter grid per layer type: a one-layer net exported to ONNX and run in onnxruntime agrees
with the engine's forward within 1e-5 of each output's magnitude (edge cases of Caffe's geometry
included: pooling windows starting in the padding, AVE's divisor at the borders, Eltwise
coefficients, InnerProduct on axis 2)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_support import assert_agree, build, compare

from proto import caffe_pb2

TRAIN, TEST = caffe_pb2.TRAIN, caffe_pb2.TEST


def one_layer(layer: str, *shapes: tuple[int, ...], names: tuple[str, ...] = ("x", "x2", "x3")) -> str:
    """An Input layer with one top per shape (x, x2, x3), then ``layer``."""
    tops = " ".join(f'top: "{n}"' for n in names[: len(shapes)])
    dims = " ".join("shape { " + " ".join(f"dim: {d}" for d in s) + " }" for s in shapes)
    return f'layer {{ name: "in" type: "Input" {tops} input_param {{ {dims} }} }}\n{layer}'


def check(text: str, phase: int = TEST, feeds: dict | None = None, dynamic: bool = False) -> None:
    results = compare(build(text, phase=phase), feeds=feeds, dynamic_batch=dynamic)
    assert results
    assert_agree(results)


def conv(params: str, kind: str = "Convolution", bottom: str = "x") -> str:
    return (
        f'layer {{ name: "c" type: "{kind}" bottom: "{bottom}" top: "y" convolution_param {{ {params} '
        'weight_filler { type: "gaussian" std: 0.3 } bias_filler { type: "gaussian" std: 0.3 } } }'
    )


CONV = [
    "num_output: 4 kernel_size: 3",
    "num_output: 6 kernel_size: 3 group: 3 stride: 2 pad: 1",
    "num_output: 4 kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 2 pad_w: 0",
    "num_output: 3 kernel_size: 3 dilation: 2 pad: 2",
    "num_output: 4 kernel_size: 2 stride: 3 bias_term: false",
    "num_output: 2 kernel_size: 5 stride: 4 pad: 1",  # Caffe's window reaching past the padding
]


@pytest.mark.parametrize("params", CONV)
def test_convolution(params):
    check(one_layer(conv(params), (2, 6, 9, 8)))


def test_convolution_3d():
    check(
        one_layer(
            conv("num_output: 2 kernel_size: 2 kernel_size: 3 kernel_size: 2 pad: 1 stride: 2"),
            (1, 2, 5, 6, 7),
        )
    )


DECONV = [
    "num_output: 4 kernel_size: 3",
    "num_output: 6 kernel_size: 4 stride: 2 pad: 1 group: 3",
    "num_output: 2 kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 3 pad_h: 1",
    "num_output: 3 kernel_size: 3 dilation: 2 bias_term: false",
]


@pytest.mark.parametrize("params", DECONV)
def test_deconvolution(params):
    check(one_layer(conv(params, "Deconvolution"), (2, 6, 5, 4)))


def pool(params: str, tops: str = 'top: "y"') -> str:
    return f'layer {{ name: "p" type: "Pooling" bottom: "x" {tops} pooling_param {{ {params} }} }}'


POOL = [
    "kernel_size: 3 stride: 2",  # ceil rounding: a last window cut by the image's end
    "kernel_size: 2 stride: 2",
    "kernel_size: 3 stride: 2 pad: 1",
    "kernel_size: 2 stride: 2 pad: 1",  # the last window would start in the padding: dropped
    "kernel_size: 3 stride: 3 pad: 2",
    "kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 1 pad_w: 1",
    "kernel_size: 4 stride: 1 pad: 3",
    "kernel_size: 2 stride: 3",  # stride past the kernel: windows stop short of the end
    "kernel_size: 3 stride: 2 pad: 1 round_mode: FLOOR",
    "global_pooling: true",
]


@pytest.mark.parametrize("method", ["MAX", "AVE"])
@pytest.mark.parametrize("params", POOL)
def test_pooling(method, params):
    check(one_layer(pool(f"pool: {method} {params}"), (2, 3, 7, 8)))


def test_ave_pooling_divisor_at_the_borders_counts_padding_not_beyond():
    """Ones in, AVE 3x3 stride 2 pad 1 on 6x6: the first window holds 4 image values and 5 padding ones
    (divisor 9); the last (rows and columns 5..7) holds 1 image value, 3 padding ones and 5 past the
    padded edge (divisor 4, not 9)."""
    text = one_layer(pool("pool: AVE kernel_size: 3 stride: 2 pad: 1"), (1, 1, 6, 6))
    results = compare(build(text), feeds={"x": np.ones((1, 1, 6, 6), np.float32)})
    got, want = results["y"]
    assert want[0, 0, 0, 0] == pytest.approx(4 / 9) and want[0, 0, -1, -1] == pytest.approx(1 / 4)
    assert_agree(results)


def test_max_pooling_mask_and_stochastic_at_test():
    check(one_layer(pool("pool: MAX kernel_size: 3 stride: 2 pad: 1", 'top: "y" top: "mask"'), (2, 3, 7, 8)))
    positive = {"x": np.random.default_rng(1).uniform(0.1, 2, (2, 3, 8, 8)).astype(np.float32)}
    check(one_layer(pool("pool: STOCHASTIC kernel_size: 3 stride: 2"), (2, 3, 8, 8)), feeds=positive)


@pytest.mark.parametrize(
    "params,shape",
    [("pyramid_height: 3 pool: MAX", (2, 3, 7, 9)), ("pyramid_height: 2 pool: AVE", (2, 3, 7, 9)),
     ("pyramid_height: 1", (2, 3, 5, 6)), ("pyramid_height: 4 pool: AVE", (1, 2, 16, 16))],
)  # fmt: skip
@pytest.mark.parametrize("dynamic", [False, True])
def test_spp(params, shape, dynamic):
    """Each level is Caffe's Pooling with its padded bins (AVE's divisor at the borders included)."""
    layer = f'layer {{ name: "s" type: "SPP" bottom: "x" top: "y" spp_param {{ {params} }} }}'
    check(one_layer(layer, shape), dynamic=dynamic)


def test_stochastic_spp_at_test():
    positive = {"x": np.random.default_rng(2).uniform(0.1, 2, (2, 3, 8, 8)).astype(np.float32)}
    spp = 'layer { name: "s" type: "SPP" bottom: "x" top: "y" '
    spp += "spp_param { pyramid_height: 2 pool: STOCHASTIC } }"
    check(one_layer(spp, (2, 3, 8, 8)), feeds=positive)


@pytest.mark.parametrize(
    "params",
    [
        "local_size: 5 alpha: 0.1 beta: 0.75",
        "local_size: 3 alpha: 2 beta: 0.5 k: 2",
        "local_size: 3 alpha: 0.5 beta: 0.75 norm_region: WITHIN_CHANNEL",
        "local_size: 5 alpha: 1 beta: 0.6 norm_region: WITHIN_CHANNEL k: 3",
    ],
)
def test_lrn(params):
    check(
        one_layer(
            f'layer {{ name: "n" type: "LRN" bottom: "x" top: "y" lrn_param {{ {params} }} }}', (2, 7, 5, 6)
        )
    )


def batch_norm_net(params: str = "", shape=(3, 4, 5, 2)) -> str:
    return one_layer(f'layer {{ name: "bn" type: "BatchNorm" bottom: "x" top: "x" {params} }}', shape)


@pytest.mark.parametrize("phase", [TRAIN, TEST])
@pytest.mark.parametrize("shape", [(3, 4, 5, 2), (6, 5)])
def test_batch_norm_with_its_scale_factor(phase, shape):
    net = build(batch_norm_net(shape=shape), phase=phase)
    draw = np.random.default_rng(3)
    mean, var, factor = net.layers[1].blobs
    mean.data[...] = draw.standard_normal(mean.shape) * 3
    var.data[...] = draw.uniform(1, 4, var.shape) * 3
    factor.data[...] = 3.0  # the stored sums are divided by it
    results = compare(net)
    assert_agree(results)


def test_batch_norm_global_stats_in_train_and_a_zero_factor():
    check(batch_norm_net("batch_norm_param { use_global_stats: true eps: 0.01 }"), phase=TRAIN)


def scale_layer(params: str, bottoms: str = 'bottom: "x"', kind: str = "Scale") -> str:
    field = "scale_param" if kind == "Scale" else "bias_param"
    filler = 'filler { type: "gaussian" std: 1 }'
    bias = 'bias_filler { type: "gaussian" std: 1 }' if "bias_term" in params else ""
    return f'layer {{ name: "s" type: "{kind}" {bottoms} top: "y" {field} {{ {params} {filler} {bias} }} }}'


@pytest.mark.parametrize(
    "params",
    [
        "",
        "bias_term: true",
        "axis: 0 num_axes: 2",
        "axis: 2 num_axes: 1 bias_term: true",
        "num_axes: 0",
        "axis: -1",
    ],
)
def test_scale(params):
    check(one_layer(scale_layer(params), (2, 3, 4, 5)))


def test_scale_and_bias_by_a_second_bottom():
    check(one_layer(scale_layer("axis: 1", 'bottom: "x" bottom: "x2"'), (2, 3, 4, 5), (3, 4)))
    check(one_layer(scale_layer("axis: 0 bias_term: true", 'bottom: "x" bottom: "x2"'), (2, 3, 4, 5), (2, 3)))
    check(one_layer(scale_layer("axis: 1", 'bottom: "x" bottom: "x2"', "Bias"), (2, 3, 4, 5), (3,)))


@pytest.mark.parametrize("params", ["", "axis: 2 num_axes: 2", "num_axes: 0"])
def test_bias(params):
    check(one_layer(scale_layer(params, kind="Bias"), (2, 3, 4, 5)))


def inner_product(params: str) -> str:
    return (
        f'layer {{ name: "ip" type: "InnerProduct" bottom: "x" top: "y" inner_product_param {{ {params} '
        'weight_filler { type: "gaussian" std: 0.5 } bias_filler { type: "gaussian" std: 0.5 } } }'
    )


@pytest.mark.parametrize(
    "params",
    [
        "num_output: 5",
        "num_output: 5 axis: 2",
        "num_output: 3 transpose: true",
        "num_output: 4 axis: 2 transpose: true bias_term: false",
        "num_output: 2 axis: 0",
        "num_output: 3 axis: -1",
    ],
)
def test_inner_product(params):
    check(one_layer(inner_product(params), (2, 3, 4, 5)))


@pytest.mark.parametrize("axis", [1, 2, -1, 0])
def test_softmax(axis):
    check(
        one_layer(
            f'layer {{ name: "s" type: "Softmax" bottom: "x" top: "y" softmax_param {{ axis: {axis} }} }}',
            (2, 3, 4, 5),
        )
    )


def test_concat_slice_and_split():
    text = one_layer(
        'layer { name: "cat" type: "Concat" bottom: "x" bottom: "x2" top: "c" concat_param { axis: 1 } }\n'
        'layer { name: "sl" type: "Slice" bottom: "c" top: "a" top: "b" top: "d" '
        "slice_param { slice_point: 1 slice_point: 4 } }\n"
        'layer { name: "sl2" type: "Slice" bottom: "c" top: "e" top: "f" slice_param { axis: 3 } }\n'
        'layer { name: "cat0" type: "Concat" bottom: "x" bottom: "x" top: "g" concat_param { axis: 0 } }',
        (2, 3, 4, 6), (2, 2, 4, 6),
    )  # fmt: skip
    check(text)


@pytest.mark.parametrize(
    "params",
    ["operation: SUM", "operation: SUM coeff: 0.5 coeff: -2 coeff: 3", "operation: PROD", "operation: MAX"],
)
def test_eltwise(params):
    bottoms = 'bottom: "x" bottom: "x2" bottom: "x3"'
    layer = f'layer {{ name: "e" type: "Eltwise" {bottoms} top: "y" eltwise_param {{ {params} }} }}'
    check(one_layer(layer, (2, 3, 4), (2, 3, 4), (2, 3, 4)))


@pytest.mark.parametrize(
    "layer",
    [
        'type: "Flatten"',
        'type: "Flatten" flatten_param { axis: 2 }',
        'type: "Flatten" flatten_param { axis: 1 end_axis: 2 }',
        'type: "Reshape" reshape_param { shape { dim: 0 dim: -1 dim: 2 } }',
        'type: "Reshape" reshape_param { shape { dim: 6 dim: 2 } axis: 1 num_axes: 2 }',
        'type: "Tile" tile_param { tiles: 3 }',
        'type: "Tile" tile_param { axis: 2 tiles: 2 }',
        'type: "Dropout" dropout_param { dropout_ratio: 0.3 }',
    ],
)
def test_shape_layers(layer):
    check(one_layer(f'layer {{ name: "l" {layer} bottom: "x" top: "y" }}', (2, 3, 4, 5)))


@pytest.mark.parametrize("params", ["axis: 2 offset: 1", "axis: 1 offset: 0 offset: 2 offset: 1", "axis: 3"])
def test_crop(params):
    text = one_layer(
        f'layer {{ name: "c" type: "Crop" bottom: "x" bottom: "x2" top: "y" crop_param {{ {params} }} }}',
        (2, 5, 7, 8),
        (2, 3, 4, 5),
    )
    check(text)


NEURONS = [
    ('type: "ReLU"', None),
    ('type: "ReLU" relu_param { negative_slope: 0.1 }', None),
    ('type: "PReLU" prelu_param { filler { type: "gaussian" std: 1 } }', None),
    ('type: "PReLU" prelu_param { channel_shared: true filler { type: "constant" value: 0.3 } }', None),
    ('type: "ELU" elu_param { alpha: 0.7 }', None),
    ('type: "Sigmoid"', None),
    ('type: "TanH"', None),
    ('type: "AbsVal"', None),
    ('type: "BNLL"', None),
    ('type: "Power" power_param { power: 2 scale: 0.5 shift: 1 }', None),
    ('type: "Power" power_param { power: 0.5 scale: 2 shift: 0 }', "positive"),
    ('type: "Power" power_param { power: 3 scale: 0 shift: 2 }', None),
    ('type: "Exp"', None),
    ('type: "Exp" exp_param { base: 2 scale: 0.5 shift: 1 }', None),
    ('type: "Log"', "positive"),
    ('type: "Log" log_param { base: 10 scale: 2 shift: 0.5 }', "positive"),
    ('type: "Threshold" threshold_param { threshold: 0.2 }', None),
    ('type: "Clip" clip_param { min: -0.5 max: 0.7 }', None),
    ('type: "Swish" swish_param { beta: 1.5 }', None),
    ('type: "MVN"', None),
    ('type: "MVN" mvn_param { across_channels: true normalize_variance: false }', None),
]


@pytest.mark.parametrize("layer,inputs", NEURONS)
def test_neuron(layer, inputs):
    shape = (2, 3, 4, 5)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32) * 3
    if inputs == "positive":
        x = np.abs(x) + 0.1
    top = "y" if "AbsVal" in layer else "x"  # in place where Caffe allows it
    check(one_layer(f'layer {{ name: "n" {layer} bottom: "x" top: "{top}" }}', shape), feeds={"x": x})


@pytest.mark.parametrize(
    "params",
    [
        "",
        "top_k: 3",
        "out_max_val: true top_k: 2",
        "axis: 1",
        "axis: 2 top_k: 2",
        "axis: 1 out_max_val: true",
    ],
)
def test_argmax(params):
    check(
        one_layer(
            f'layer {{ name: "a" type: "ArgMax" bottom: "x" top: "y" argmax_param {{ {params} }} }}',
            (2, 4, 3, 5),
        )
    )


def test_argmax_ties_go_to_the_higher_index():
    x = np.zeros((2, 6), np.float32)
    x[:, [1, 4]] = 1
    text = one_layer(
        'layer { name: "a" type: "ArgMax" bottom: "x" top: "y" argmax_param { top_k: 2 } }', (2, 6)
    )
    results = compare(build(text), feeds={"x": x})
    assert results["y"][1][0].ravel().tolist() == [4, 1]
    assert_agree(results)


@pytest.mark.parametrize("op", ["SUM", "ASUM", "SUMSQ", "MEAN"])
@pytest.mark.parametrize("params", ["", "axis: 2 coeff: -0.5", "axis: -1"])
def test_reduction(op, params):
    param = f"reduction_param {{ operation: {op} {params} }}"
    layer = f'layer {{ name: "r" type: "Reduction" bottom: "x" top: "y" {param} }}'
    check(one_layer(layer, (2, 3, 4, 5)))


@pytest.mark.parametrize("bias", ["true", "false"])
def test_embed(bias):
    ids = np.random.default_rng(4).integers(0, 7, (3, 4)).astype(np.float32)
    layer = (
        'layer { name: "e" type: "Embed" bottom: "x" top: "y" embed_param { num_output: 5 input_dim: 7 '
        f'bias_term: {bias} weight_filler {{ type: "gaussian" std: 1 }} '
        'bias_filler { type: "gaussian" std: 1 } } }'
    )
    check(one_layer(layer, (3, 4)), feeds={"x": ids})


def labels(n: int, classes: int, ignore: int | None = None, shape=None) -> np.ndarray:
    out = np.random.default_rng(5).integers(0, classes, shape or (n,)).astype(np.float32)
    if ignore is not None:
        out.reshape(-1)[::3] = ignore
    return out


@pytest.mark.parametrize(
    "params",
    ["", "loss_param { ignore_label: 2 }", "loss_param { ignore_label: -1 normalization: FULL }",
     "loss_param { normalization: BATCH_SIZE }", "loss_param { normalization: NONE ignore_label: 0 }"],
)  # fmt: skip
def test_softmax_with_loss(params):
    ignore = None if "ignore_label" not in params else int(params.split("ignore_label: ")[1].split()[0])
    tops = 'top: "loss" top: "prob" loss_weight: 1 loss_weight: 0'
    layer = f'layer {{ name: "l" type: "SoftmaxWithLoss" bottom: "x" bottom: "x2" {tops} {params} }}'
    text = one_layer(layer, (2, 4, 3, 2), (2, 1, 3, 2))
    check(text, phase=TRAIN, feeds={"x2": labels(2, 4, ignore, (2, 1, 3, 2))})


@pytest.mark.parametrize(
    "params", ["", "accuracy_param { top_k: 2 }", "accuracy_param { ignore_label: 1 axis: 1 }"]
)
def test_accuracy(params):
    ignore = 1 if "ignore_label" in params else None
    tops = 'top: "acc" top: "per_class"'
    layer = f'layer {{ name: "a" type: "Accuracy" bottom: "x" bottom: "x2" {tops} {params} }}'
    check(one_layer(layer, (8, 5), (8,)), feeds={"x2": labels(8, 5, ignore)})


def test_regression_and_pair_losses():
    text = one_layer(
        'layer { name: "e" type: "EuclideanLoss" bottom: "x" bottom: "x2" top: "euclid" }\n'
        'layer { name: "s" type: "SigmoidCrossEntropyLoss" bottom: "x" bottom: "t" top: "sce" }\n'
        'layer { name: "s2" type: "SigmoidCrossEntropyLoss" bottom: "x" bottom: "t" top: "sce2" '
        "loss_param { ignore_label: 0 normalization: VALID } }\n"
        'layer { name: "c" type: "ContrastiveLoss" bottom: "x" bottom: "x2" bottom: "sim" top: "contrast" '
        "contrastive_loss_param { margin: 2 } }\n"
        'layer { name: "c2" type: "ContrastiveLoss" bottom: "x" bottom: "x2" bottom: "sim" top: "legacy" '
        "contrastive_loss_param { margin: 3 legacy_version: true } }",
        (4, 3), (4, 3), (4, 3), (4, 1), names=("x", "x2", "t", "sim"),
    )  # fmt: skip
    targets = (np.random.default_rng(6).uniform(0, 1, (4, 3)) > 0.5).astype(np.float32)
    similar = np.array([[1], [0], [1], [0]], np.float32)
    check(text, phase=TRAIN, feeds={"t": targets, "sim": similar})


def test_classification_losses():
    text = one_layer(
        'layer { name: "h1" type: "HingeLoss" bottom: "x" bottom: "x2" top: "hinge1" }\n'
        'layer { name: "h2" type: "HingeLoss" bottom: "x" bottom: "x2" top: "hinge2" '
        "hinge_loss_param { norm: L2 } }\n"
        'layer { name: "p" type: "Softmax" bottom: "x" top: "p" }\n'
        'layer { name: "m" type: "MultinomialLogisticLoss" bottom: "p" bottom: "x2" top: "mlog" }\n'
        'layer { name: "i" type: "InfogainLoss" bottom: "x" bottom: "x2" bottom: "H" top: "info" '
        "loss_param { ignore_label: 3 } }",
        (6, 5), (6,), (5, 5), names=("x", "x2", "H"),
    )  # fmt: skip
    h = np.random.default_rng(7).uniform(0, 1, (5, 5)).astype(np.float32)
    check(text, phase=TRAIN, feeds={"x2": labels(6, 5), "H": h})
