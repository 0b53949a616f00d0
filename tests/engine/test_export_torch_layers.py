"""Every exportable layer type, over a grid of its parameters (edge cases included), exported to PyTorch:
forward and backward agree with the engine within 1e-5 relative (float32)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from google.protobuf import text_format
from torch_export_support import compare

from engine.export import ExportError
from proto import caffe_pb2

IMAGE = "dim: 2 dim: 6 dim: 7 dim: 9"
GAUSS = 'weight_filler { type: "gaussian" std: 0.3 } bias_filler { type: "gaussian" std: 0.3 }'


def one(
    kind: str, body: str, bottoms: str = 'bottom: "data"', tops: str = 'top: "y"', extra: str = ""
) -> str:
    return f'layer {{ name: "l" type: "{kind}" {bottoms} {tops} {body} {extra} }}'


CASES: dict[str, tuple[str, str]] = {
    "conv": (IMAGE, one("Convolution", f"convolution_param {{ num_output: 4 kernel_size: 3 {GAUSS} }}")),
    "conv_group_pad_stride": (
        IMAGE,
        one(
            "Convolution",
            f"convolution_param {{ num_output: 4 kernel_size: 3 group: 2 pad: 1 stride: 2 {GAUSS} }}",
        ),
    ),
    "conv_hw_dilation": (
        IMAGE,
        one(
            "Convolution",
            "convolution_param { num_output: 3 kernel_h: 2 kernel_w: 3 stride_h: 2 stride_w: 1 "
            f"pad_h: 1 pad_w: 0 dilation: 2 {GAUSS} }}",
        ),
    ),
    "conv_extent_past_input": (
        "dim: 1 dim: 2 dim: 4 dim: 4",
        one("Convolution", f"convolution_param {{ num_output: 2 kernel_size: 5 stride: 3 {GAUSS} }}"),
    ),
    "conv_no_bias_1d": (
        "dim: 2 dim: 3 dim: 10",
        one("Convolution", f"convolution_param {{ num_output: 2 kernel_size: 3 bias_term: false {GAUSS} }}"),
    ),
    "conv_3d": (
        "dim: 1 dim: 2 dim: 4 dim: 5 dim: 5",
        one("Convolution", f"convolution_param {{ num_output: 2 kernel_size: 2 stride: 1 pad: 1 {GAUSS} }}"),
    ),
    "deconv": (
        IMAGE,
        one(
            "Deconvolution",
            f"convolution_param {{ num_output: 4 kernel_size: 4 stride: 2 pad: 1 group: 2 {GAUSS} }}",
        ),
    ),
    "pool_max_ceil": (IMAGE, one("Pooling", "pooling_param { pool: MAX kernel_size: 3 stride: 2 }")),
    "pool_max_pad_last_window_in_padding": (
        "dim: 1 dim: 2 dim: 6 dim: 6",
        one("Pooling", "pooling_param { pool: MAX kernel_size: 2 stride: 2 pad: 1 }"),
    ),
    "pool_max_mask": (
        IMAGE,
        one(
            "Pooling",
            "pooling_param { pool: MAX kernel_size: 3 stride: 2 pad: 1 }",
            tops='top: "y" top: "mask"',
        ),
    ),
    "pool_ave_borders": (
        IMAGE,
        one("Pooling", "pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 }"),
    ),
    "pool_ave_hw": (
        IMAGE,
        one(
            "Pooling",
            "pooling_param { pool: AVE kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 3 pad_h: 1 pad_w: 0 }",
        ),
    ),
    "pool_floor": (
        IMAGE,
        one("Pooling", "pooling_param { pool: MAX kernel_size: 2 stride: 2 round_mode: FLOOR }"),
    ),
    "pool_global_ave": (IMAGE, one("Pooling", "pooling_param { pool: AVE global_pooling: true }")),
    "pool_global_max": (IMAGE, one("Pooling", "pooling_param { pool: MAX global_pooling: true }")),
    "lrn_across": (IMAGE, one("LRN", "lrn_param { local_size: 5 alpha: 0.3 beta: 0.75 k: 2 }")),
    "lrn_within": (
        IMAGE,
        one("LRN", "lrn_param { local_size: 3 alpha: 0.3 beta: 0.75 norm_region: WITHIN_CHANNEL }"),
    ),
    "ip": (IMAGE, one("InnerProduct", f"inner_product_param {{ num_output: 5 {GAUSS} }}")),
    "ip_axis_2": (IMAGE, one("InnerProduct", f"inner_product_param {{ num_output: 5 axis: 2 {GAUSS} }}")),
    "ip_transpose_no_bias": (
        IMAGE,
        one(
            "InnerProduct",
            f"inner_product_param {{ num_output: 3 transpose: true bias_term: false {GAUSS} }}",
        ),
    ),
    "batch_norm": (IMAGE, one("BatchNorm", "batch_norm_param { eps: 0.001 moving_average_fraction: 0.9 }")),
    "scale_bias": (IMAGE, one("Scale", 'scale_param { bias_term: true filler { type: "gaussian" std: 1 } }')),
    "scale_axis_2": (
        IMAGE,
        one("Scale", 'scale_param { axis: 2 num_axes: 1 filler { type: "gaussian" std: 1 } }'),
    ),
    "bias": (IMAGE, one("Bias", 'bias_param { filler { type: "gaussian" std: 1 } }')),
    "relu": (IMAGE, one("ReLU", "")),
    "relu_leaky": (IMAGE, one("ReLU", "relu_param { negative_slope: 0.1 }")),
    "prelu": (IMAGE, one("PReLU", 'prelu_param { filler { type: "gaussian" std: 0.5 } }')),
    "prelu_shared": (IMAGE, one("PReLU", "prelu_param { channel_shared: true }")),
    "elu": (IMAGE, one("ELU", "elu_param { alpha: 0.7 }")),
    "sigmoid": (IMAGE, one("Sigmoid", "")),
    "tanh": (IMAGE, one("TanH", "")),
    "absval": (IMAGE, one("AbsVal", "")),
    "bnll": (IMAGE, one("BNLL", "")),
    "power": (IMAGE, one("Power", "power_param { power: 2 scale: 0.5 shift: 3 }")),
    "exp": (IMAGE, one("Exp", "exp_param { base: 2 scale: 0.5 shift: 1 }")),
    "log": (IMAGE, one("Log", "log_param { base: 10 scale: 0.1 shift: 5 }")),
    "threshold": (IMAGE, one("Threshold", "threshold_param { threshold: 0.2 }")),
    "dropout_test": (IMAGE, one("Dropout", "dropout_param { dropout_ratio: 0.3 }")),
    "softmax": (IMAGE, one("Softmax", "")),
    "softmax_axis_2": (IMAGE, one("Softmax", "softmax_param { axis: 2 }")),
    "flatten": (IMAGE, one("Flatten", "flatten_param { axis: 1 end_axis: 2 }")),
    "reshape": (IMAGE, one("Reshape", "reshape_param { shape { dim: 0 dim: -1 dim: 3 } }")),
    "tile": (IMAGE, one("Tile", "tile_param { axis: 1 tiles: 3 }")),
    "reduction_sum": (IMAGE, one("Reduction", "reduction_param { operation: SUM axis: 1 coeff: 2 }")),
    "reduction_asum": (IMAGE, one("Reduction", "reduction_param { operation: ASUM axis: 2 }")),
    "reduction_sumsq": (IMAGE, one("Reduction", "reduction_param { operation: SUMSQ axis: -1 }")),
    "reduction_mean": (IMAGE, one("Reduction", "reduction_param { operation: MEAN coeff: 3 }")),
    "argmax": (IMAGE, one("ArgMax", "argmax_param { top_k: 2 }")),
    "argmax_axis_values": (IMAGE, one("ArgMax", "argmax_param { axis: 1 top_k: 2 out_max_val: true }")),
    "slice_points": (
        IMAGE,
        one(
            "Slice",
            "slice_param { axis: 1 slice_point: 1 slice_point: 4 }",
            tops='top: "a" top: "b" top: "c"',
        ),
    ),
    "slice_equal": (IMAGE, one("Slice", "slice_param { axis: 3 }", tops='top: "a" top: "b" top: "c"')),
    "split": (IMAGE, one("Split", "", tops='top: "a" top: "b"')),
    "mvn": (IMAGE, one("MVN", "")),
    "mvn_across": (IMAGE, one("MVN", "mvn_param { across_channels: true }")),
    "mvn_mean_only": (IMAGE, one("MVN", "mvn_param { normalize_variance: false }")),
    # eps large enough that Caffe's gradient (std + eps held fixed) is not the forward's derivative
    "mvn_caffe_gradient_eps": (IMAGE, one("MVN", "mvn_param { eps: 0.5 across_channels: true }")),
    "mvn_groups_of_one": ("dim: 3 dim: 5", one("MVN", "")),
    "spp_max_3_levels": (IMAGE, one("SPP", "spp_param { pyramid_height: 3 pool: MAX }")),
    "spp_ave_2_levels": (IMAGE, one("SPP", "spp_param { pyramid_height: 2 pool: AVE }")),
    "spp_one_level": (IMAGE, one("SPP", "spp_param { pyramid_height: 1 }")),
    "spp_square_4_levels": ("dim: 2 dim: 2 dim: 8 dim: 8", one("SPP", "spp_param { pyramid_height: 4 }")),
}

TWO_INPUTS = "dim: 2 dim: 6 dim: 7 dim: 9"
PAIRS: dict[str, str] = {
    "eltwise_sum_coeffs": one(
        "Eltwise", "eltwise_param { operation: SUM coeff: 0.5 coeff: -2 }", 'bottom: "data" bottom: "other"'
    ),
    "eltwise_prod": one("Eltwise", "eltwise_param { operation: PROD }", 'bottom: "data" bottom: "other"'),
    "eltwise_max": one("Eltwise", "eltwise_param { operation: MAX }", 'bottom: "data" bottom: "other"'),
    "concat": one("Concat", "concat_param { axis: 1 }", 'bottom: "data" bottom: "other"'),
    "concat_axis_3": one("Concat", "concat_param { axis: 3 }", 'bottom: "data" bottom: "other"'),
    "scale_two_bottoms": one("Scale", "scale_param { axis: 0 }", 'bottom: "data" bottom: "other"'),
    "euclidean_loss": one("EuclideanLoss", "", 'bottom: "data" bottom: "other"'),
}


def net(shape: str, layers: str, extra_input: str = "") -> caffe_pb2.NetParameter:
    text = f'layer {{ name: "in" type: "Input" top: "data" input_param {{ shape {{ {shape} }} }} }}\n'
    text += extra_input + layers
    return text_format.Parse(text, caffe_pb2.NetParameter())


def check(errors: dict[str, float]) -> None:
    assert errors, "nothing was compared"
    bad = {k: v for k, v in errors.items() if not v <= 1e-5}
    assert not bad, bad


@pytest.mark.parametrize("case", sorted(CASES))
def test_layer_matches_engine(case: str) -> None:
    shape, layers = CASES[case]
    gradient = case not in ("argmax", "argmax_axis_values", "threshold")  # Caffe has none for these
    check(compare(net(shape, layers), caffe_pb2.TEST, force_backward=gradient))


@pytest.mark.parametrize("case", sorted(PAIRS))
def test_two_bottom_layer_matches_engine(case: str) -> None:
    other = "dim: 2 dim: 6 dim: 7 dim: 9"
    if case == "scale_two_bottoms":
        other = "dim: 2 dim: 6"
    if case == "concat_axis_3":
        other = "dim: 2 dim: 6 dim: 7 dim: 4"
    extra = f'layer {{ name: "in2" type: "Input" top: "other" input_param {{ shape {{ {other} }} }} }}\n'
    check(compare(net(TWO_INPUTS, PAIRS[case], extra), caffe_pb2.TEST))


LOSS_INPUTS = (
    'layer { name: "in2" type: "Input" top: "label" input_param { shape { dim: 2 dim: 1 dim: 7 dim: 9 } } }\n'
)


@pytest.mark.parametrize(
    "body",
    [
        "",
        "loss_param { ignore_label: 1 }",
        "loss_param { normalization: FULL } loss_weight: 2",
        "loss_param { normalization: BATCH_SIZE } softmax_param { axis: 1 }",
        "loss_param { normalization: NONE }",
    ],
)
def test_softmax_loss_matches_engine(body: str) -> None:
    layers = one("SoftmaxWithLoss", body, 'bottom: "data" bottom: "label"', 'top: "loss"')
    layers += one(
        "Accuracy", "accuracy_param { top_k: 2 }", 'bottom: "data" bottom: "label"', 'top: "acc"'
    ).replace('name: "l"', 'name: "acc"')
    check(compare(net(IMAGE, layers, LOSS_INPUTS), caffe_pb2.TRAIN))


def test_sigmoid_cross_entropy_and_contrastive_losses_match_engine() -> None:
    targets = f'layer {{ name: "t" type: "Input" top: "label" input_param {{ shape {{ {IMAGE} }} }} }}\n'
    layers = one(
        "SigmoidCrossEntropyLoss",
        "loss_param { ignore_label: 1 }",
        'bottom: "data" bottom: "label"',
        'top: "loss"',
    )
    check(compare(net(IMAGE, layers, targets), caffe_pb2.TRAIN))
    pairs = (
        'layer { name: "b" type: "Input" top: "other" input_param { shape { dim: 4 dim: 3 } } }\n'
        'layer { name: "s" type: "Input" top: "sim" input_param { shape { dim: 4 } } }\n'
    )
    for legacy in ("false", "true"):
        layers = one(
            "ContrastiveLoss",
            f"contrastive_loss_param {{ margin: 2 legacy_version: {legacy} }}",
            'bottom: "data" bottom: "other" bottom: "sim"',
            'top: "loss"',
        )
        check(compare(net("dim: 4 dim: 3", layers, pairs), caffe_pb2.TRAIN))


def test_crop_and_embed_match_engine() -> None:
    big = 'layer { name: "b" type: "Input" top: "like" '
    big += "input_param { shape { dim: 2 dim: 6 dim: 4 dim: 5 } } }\n"
    layers = one("Crop", "crop_param { axis: 2 offset: 1 offset: 3 }", 'bottom: "data" bottom: "like"')
    check(compare(net(IMAGE, layers, big), caffe_pb2.TEST))
    ids = {"data": np.array([[0, 3], [2, 4]], np.float32)}
    layers = one("Embed", f"embed_param {{ num_output: 3 input_dim: 5 {GAUSS} }}")
    check(compare(net("dim: 2 dim: 2", layers), caffe_pb2.TEST, inputs=ids))


def test_in_place_layers_shared_parameters_and_frozen_ones_match_engine() -> None:
    layers = (
        'layer { name: "a" type: "InnerProduct" bottom: "data" top: "a" '
        f'param {{ name: "w" }} param {{ lr_mult: 0 }} '
        f"inner_product_param {{ num_output: 4 {GAUSS} }} }}\n"
        'layer { name: "s" type: "Scale" bottom: "a" top: "a" '
        'scale_param { filler { type: "gaussian" std: 1 } } }\n'
        'layer { name: "r" type: "ReLU" bottom: "a" top: "a" }\n'
        f'layer {{ name: "b" type: "InnerProduct" bottom: "data" top: "b" param {{ name: "w" }} '
        f"inner_product_param {{ num_output: 4 {GAUSS} }} }}\n"
        'layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" bottom: "a" top: "y" }\n'
    )
    errors = compare(net("dim: 3 dim: 5", layers), caffe_pb2.TRAIN)
    assert errors["d b.weight"] == errors["d a.weight"]  # one parameter, one gradient
    assert "d a.bias" not in errors  # lr_mult 0: no gradient
    check(errors)


def test_train_dropout_replays_the_engine_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    layers = one("Dropout", "dropout_param { dropout_ratio: 0.4 }", tops='top: "data"')
    check(compare(net(IMAGE, layers), caffe_pb2.TRAIN, monkeypatch=monkeypatch))


def test_a_type_without_an_export_is_refused_naming_the_layer() -> None:
    layers = one("Im2col", "convolution_param { kernel_size: 2 }")
    with pytest.raises(ExportError, match=r"layer 'l' \(Im2col\): this layer type cannot be exported"):
        compare(net(IMAGE, layers), caffe_pb2.TEST)


def test_stochastic_spp_is_refused_in_train() -> None:
    layers = one("SPP", "spp_param { pyramid_height: 2 pool: STOCHASTIC }")
    with pytest.raises(ExportError, match=r"layer 'l' \(SPP\): STOCHASTIC pooling draws"):
        compare(net("dim: 1 dim: 2 dim: 8 dim: 8", layers), caffe_pb2.TRAIN)
