"""A BatchNorm, the in-place Scale after it and a ReLU after that run as one (engine.fusion) with the
numbers of the layers run one by one: loss, every blob's data and diff, the learned and running
parameters; and only where nothing shows the difference (all in place, no loss weight, every layer
of the group runs, no debug_info)."""

from __future__ import annotations

import types

import numpy as np
import pytest
from google.protobuf import text_format

from engine import fusion
from engine.layers import channel_norm
from engine.net import Net
from proto import caffe_pb2

pytestmark = pytest.mark.skipif(
    not channel_norm.available(), reason="the kernels are not built (no C compiler at install)"
)


def net_text(
    bn_top="conv",
    scale_bottom="conv",
    scale_top="conv",
    scale_params="",
    bn_params="",
    scale_extra="",
    between="",
    relu="",
    bias="true",
):
    """Input -> conv -> BatchNorm -> Scale (bias) -> ReLU -> InnerProduct -> SoftmaxWithLoss."""
    return f"""
layer {{ name: "input" type: "Input" top: "data" top: "label"
        input_param {{ shape {{ dim: 3 dim: 2 dim: 5 dim: 7 }} shape {{ dim: 3 }} }} }}
layer {{ name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param {{ num_output: 4 kernel_size: 3 pad: 1 bias_term: false
                            weight_filler {{ type: "gaussian" std: 0.5 }} }} }}
layer {{ name: "bn" type: "BatchNorm" bottom: "conv" top: "{bn_top}" {bn_params} }}
{between}
layer {{ name: "scale" type: "Scale" bottom: "{scale_bottom}" top: "{scale_top}" {scale_params}
        scale_param {{ bias_term: {bias} filler {{ type: "uniform" min: 0.5 max: 2 }}
                      bias_filler {{ type: "uniform" min: -1 max: 1 }} }} {scale_extra} }}
layer {{ name: "relu" type: "ReLU" bottom: "{scale_top}" top: "{scale_top}" {relu} }}
layer {{ name: "ip" type: "InnerProduct" bottom: "{scale_top}" top: "ip"
        inner_product_param {{ num_output: 3 weight_filler {{ type: "gaussian" std: 0.5 }} }} }}
layer {{ name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }}
"""


def nets(text, dtype=np.float32, phase=caffe_pb2.TRAIN):
    """The net as the engine builds it, and the same net (same parameters, same inputs) with its pairs
    run one by one."""
    param = text_format.Parse(text, caffe_pb2.NetParameter())
    fused, alone = Net(param, phase=phase, dtype=dtype), Net(param, phase=phase, dtype=dtype)
    alone.fused = {}
    rng = np.random.default_rng(0)
    data, label = rng.normal(2, 3, size=(3, 2, 5, 7)), rng.integers(0, 3, size=3)
    bn = fused.layer_by_name("bn")
    for blob, value in zip(bn.blobs, (1.5, 6.0, 2.0)):  # running sums for global statistics to use
        blob.data[...] = value
    for a, b in zip(fused.layers, alone.layers):  # every layer's blobs: weights and BatchNorm's sums
        for x, y in zip(a.blobs, b.blobs):
            y.data[...] = x.data
    for net in (fused, alone):
        net.blob_by_name("data").data[...] = data
        net.blob_by_name("label").data[...] = label
    return fused, alone


def assert_same(fused, alone, rtol=2e-5):
    def close(a, b, what):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, np.abs(b).max()), err_msg=what)

    for name in alone.blob_names:
        close(fused.blob_by_name(name).data, alone.blob_by_name(name).data, f"{name} data")
        close(fused.blob_by_name(name).diff, alone.blob_by_name(name).diff, f"{name} diff")
    for a, b in zip(fused.layers, alone.layers):
        for i, (x, y) in enumerate(zip(a.blobs, b.blobs)):
            close(x.data, y.data, f"{a.name} blob {i} data")
            close(x.diff, y.diff, f"{a.name} blob {i} diff")


def train_both(fused, alone, steps=2):
    for _ in range(steps):
        losses = []
        for net in (fused, alone):
            net.clear_param_diffs()
            losses.append(net.forward_backward())
        assert losses[0] == pytest.approx(losses[1], rel=1e-4, abs=1e-6)


@pytest.mark.parametrize(
    "bn_params",
    ["", "batch_norm_param { use_global_stats: true }"],
    ids=["batch statistics", "global statistics"],
)
@pytest.mark.parametrize(
    "relu, size",
    [("", 3), ("relu_param { negative_slope: 0.1 }", 2)],
    ids=["with the relu", "a leaky relu apart"],
)
def test_the_group_as_one_gives_the_numbers_of_its_layers(bn_params, relu, size):
    fused, alone = nets(net_text(bn_params=bn_params, relu=relu))
    assert list(fused.fused) == [2]  # the BatchNorm's index
    group = fused.fused[2]
    assert group.size == size
    calls = []
    for what in ("forward", "backward"):
        run = getattr(group, what)
        setattr(group, what, lambda run=run, what=what: calls.append(what) or run())
    train_both(fused, alone)
    assert calls == ["forward", "backward"] * 2
    assert_same(fused, alone)
    assert (fused.blob_by_name("conv").data < 0).any() == bool(relu)  # the ReLU ran, in the group or not


def test_a_scale_that_learns_nothing_gets_no_gradient():
    frozen = "param { lr_mult: 0 } param { lr_mult: 0 }"
    fused, alone = nets(net_text(scale_params=frozen))
    train_both(fused, alone)
    assert_same(fused, alone)
    scale = fused.layer_by_name("scale")
    assert not scale.blobs[0].diff.any() and not scale.blobs[1].diff.any()
    assert fused.layer_by_name("conv").blobs[0].diff.any()


def test_a_scale_without_bias_or_with_a_frozen_bias():
    for fields in ({"bias": "false"}, {"scale_params": "param { lr_mult: 1 } param { lr_mult: 0 }"}):
        fused, alone = nets(net_text(**fields))
        assert list(fused.fused) == [2]
        train_both(fused, alone)
        assert_same(fused, alone)
        scale = fused.layer_by_name("scale")
        assert scale.blobs[0].diff.any() and (len(scale.blobs) == 1 or not scale.blobs[1].diff.any())


def test_float64_and_the_test_phase_run_the_layers_one_by_one():
    fused, alone = nets(net_text(), dtype=np.float64)
    assert list(fused.fused) == [2]  # found, but the kernels take float32 only: the layers run
    train_both(fused, alone)
    assert_same(fused, alone, rtol=1e-12)
    fused, alone = nets(net_text(), phase=caffe_pb2.TEST)
    assert fused.forward_from_to() == pytest.approx(alone.forward_from_to(), rel=1e-5)
    assert_same(fused, alone)


@pytest.mark.parametrize(
    "fields",
    [
        {"bn_top": "normed", "scale_bottom": "normed", "scale_top": "normed"},
        {"scale_top": "scaled"},
        {"scale_extra": "loss_weight: 1"},
        {"between": 'layer { name: "power" type: "Power" bottom: "conv" top: "conv" }'},
    ],
    ids=["batch norm not in place", "scale not in place", "a loss weight", "a layer between"],
)
def test_pairs_that_would_show_are_not_fused(fields):
    text = net_text(**fields)
    if "scale_extra" in fields:  # the Scale's weighted top the net's end (else a Split takes the weight)
        text = text[: text.index('layer { name: "relu"')]
    fused, alone = nets(text)
    assert fused.fused == {}
    train_both(fused, alone)  # and they run as the two layers do
    assert_same(fused, alone)


@pytest.mark.parametrize("end", [2, 3])
def test_forward_to_a_layer_inside_the_group_leaves_its_output_in_the_blob(end):
    fused, alone = nets(net_text())
    fused.forward_to(end)
    alone.forward_to(end)
    assert_same(fused, alone)
    conv = fused.blob_by_name("conv").data
    assert np.allclose(conv.mean(axis=(0, 2, 3)), 0, atol=1e-5) == (end == 2)  # x_norm: not scaled
    assert (conv < 0).any()  # no ReLU yet
    # then the rest, and a backward after that runs the layers one by one
    fused.forward_from(end + 1)
    alone.forward_from(end + 1)
    fused.backward()
    alone.backward()
    assert_same(fused, alone)


def test_backward_from_inside_the_group_runs_its_layers_one_by_one():
    fused, alone = nets(net_text())
    fused.forward_from_to()
    alone.forward_from_to()
    for net in (fused, alone):
        blob = net.blob_by_name("conv")
        blob.diff[...] = np.linspace(-1, 1, blob.count()).reshape(blob.shape)
        net.backward_from_to(3, 0)  # from the Scale down: the ReLU's backward is not run
    assert_same(fused, alone)


def test_debug_info_runs_the_layers_one_by_one():
    fused, alone = nets("debug_info: true\n" + net_text())
    fused.logger = alone.logger = lambda line: None

    def refuse():
        raise AssertionError("debug_info prints each layer's blobs: the pair must not run as one")

    fused.fused[2].forward = fused.fused[2].backward = refuse  # type: ignore[method-assign]
    train_both(fused, alone)
    assert_same(fused, alone)


def test_the_scale_run_alone_after_the_pair_keeps_batch_norms_x_norm():
    fused, alone = nets(net_text())
    fused.forward_from_to()
    x_norm = fused.layer_by_name("bn").x_norm.copy()
    fused.forward_from_to(3, 3)  # the Scale again, alone, in place: it keeps its own copy of its input
    np.testing.assert_array_equal(fused.layer_by_name("bn").x_norm, x_norm)


def test_layers_without_tops_are_passed_over():
    """A Silence layer (no top) among the layers: the search for groups steps over it."""
    silence = 'layer { name: "quiet" type: "Silence" bottom: "label" }\n'
    text = net_text().replace('layer { name: "bn"', silence + 'layer { name: "bn"')
    fused, alone = nets(text)
    assert [group.norm.name for group in fused.fused.values()] == ["bn"]
    train_both(fused, alone)
    assert_same(fused, alone)


def test_a_net_off_numpy_has_no_groups():
    """On the GPU the kernels do not run: the net keeps no groups (and tries none each step)."""
    fused, _ = nets(net_text())
    assert fusion.groups(fused.layers, fused.bottom_vecs, fused.top_vecs, np) != {}
    assert fusion.groups(fused.layers, fused.bottom_vecs, fused.top_vecs, types.ModuleType("cupy")) == {}
