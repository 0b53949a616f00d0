"""Net building as Caffe does it: wiring, backward pruning, loss weights, sharing, weights I/O."""

from __future__ import annotations

import re

import numpy as np
import pytest
from google.protobuf import text_format

from engine import backend
from engine.errors import NetError
from engine.net import Net
from proto import caffe_pb2

MLP = """
name: "mlp"
layer { name: "input" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 4 dim: 3 } shape { dim: 4 } } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
        inner_product_param { num_output: 5 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
        inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
"""


def build(text: str, phase=caffe_pb2.TRAIN, xp=np, **kwargs) -> Net:
    return Net(text_format.Parse(text, caffe_pb2.NetParameter()), phase=phase, xp=xp, **kwargs)


def set_inputs(net: Net, xp=np, seed=0) -> None:
    rng = np.random.default_rng(seed)
    net.blob_by_name("data").data[...] = xp.asarray(rng.normal(size=net.blob_by_name("data").shape))
    label = net.blob_by_name("label")
    label.data[...] = xp.asarray(rng.integers(0, 3, size=label.shape).astype(np.float32))


def test_shapes_inputs_outputs_and_in_place(xp):
    net = build(MLP, xp=xp)
    assert net.blob_names == ["data", "label", "ip1", "ip2", "loss"]
    assert net.input_blob_names == ["data", "label"]
    assert net.output_blob_names == ["loss"]
    assert net.blob_by_name("ip1").shape == (4, 5)
    assert net.blob_by_name("loss").shape == ()
    relu = net.layer_names.index("relu1")
    assert net.top_vecs[relu][0] is net.bottom_vecs[relu][0]
    assert net.blob_loss_weights == [0, 0, 0, 0, 1]


def test_backward_pruning_and_force_backward():
    net = build(MLP)
    assert net.layer_need_backward == [False, True, True, True, True]
    assert net.bottom_need_backward[net.layer_names.index("loss")] == [True, False]
    assert net.bottom_need_backward[net.layer_names.index("ip1")] == [False]
    forced = build("force_backward: true\n" + MLP)
    assert forced.bottom_need_backward[forced.layer_names.index("ip1")] == [True]
    assert forced.bottom_need_backward[forced.layer_names.index("loss")] == [True, False]  # labels never


def test_layers_not_under_a_loss_do_not_backpropagate():
    net = build(
        MLP + 'layer { name: "side" type: "InnerProduct" bottom: "ip2" top: "side" '
        "inner_product_param { num_output: 2 } }"
    )
    assert not net.layer_need_backward[net.layer_names.index("side")]
    assert "side" in net.output_blob_names and "loss" in net.output_blob_names


def test_lr_mult_zero_everywhere_means_no_backward():
    frozen = MLP.replace('top: "ip1"\n', 'top: "ip1" param { lr_mult: 0 } param { lr_mult: 0 }\n', 1)
    net = build(frozen)
    assert not net.layer_need_backward[net.layer_names.index("ip1")]
    assert net.layers[net.layer_names.index("ip1")].param_propagate_down == [False, False]


def test_forward_backward_gradient_matches_finite_differences():
    net = build(MLP, dtype=np.float64)
    set_inputs(net)
    loss = net.forward_backward()
    weights = net.layer_by_name("ip1").blobs[0]
    analytic = weights.diff.copy()
    eps = 1e-6
    for index in [(0, 0), (2, 1), (4, 2)]:
        original = weights.data[index]
        weights.data[index] = original + eps
        plus = net.forward_from_to()
        weights.data[index] = original - eps
        minus = net.forward_from_to()
        weights.data[index] = original
        assert analytic[index] == pytest.approx((plus - minus) / (2 * eps), rel=1e-5, abs=1e-8)
    assert loss == pytest.approx(net.forward_from_to())


def test_explicit_loss_weight_scales_loss_and_gradient():
    net1 = build(MLP, dtype=np.float64)
    net2 = build(MLP.replace('top: "loss" }', 'top: "loss" loss_weight: 3 }'), dtype=np.float64)
    for net in (net1, net2):
        set_inputs(net)
    net2.copy_trained_layers_from(net1.to_proto())
    l1, l2 = net1.forward_backward(), net2.forward_backward()
    assert l2 == pytest.approx(3 * l1)
    np.testing.assert_allclose(net2.params[0].diff, 3 * net1.params[0].diff, rtol=1e-10)


def test_loss_weight_on_a_non_loss_top_adds_its_sum():
    net = build(MLP.replace('top: "ip2"\n', 'top: "ip2" loss_weight: 0.5\n'), dtype=np.float64)
    set_inputs(net)
    loss = net.forward_from_to()
    softmax_loss = float(net.blob_by_name("loss").data)
    ip2_sum = float(net.blob_by_name("ip2_ip2_0_split_0").data.sum())
    assert loss == pytest.approx(softmax_loss + 0.5 * ip2_sum)


def test_split_layers_are_built_and_sum_gradients():
    text = MLP.replace('bottom: "ip2" bottom: "label"', 'bottom: "ip2" bottom: "label"') + (
        'layer { name: "l2" type: "EuclideanLoss" bottom: "ip1" bottom: "ip1b" top: "l2" }'
    )
    text = text.replace(
        'layer { name: "ip2"',
        'layer { name: "copy" type: "ReLU" bottom: "ip1" top: "ip1b" }\nlayer { name: "ip2"',
        1,
    )
    net = build(text)
    assert "ip1_relu1_0_split" in net.layer_names
    assert [n for n in net.blob_names if "split" in n] == [f"ip1_relu1_0_split_{k}" for k in range(3)]


def test_errors_name_the_layer():
    with pytest.raises(NetError, match="Unknown bottom blob 'nope' \\(layer 'ip1', bottom index 0\\)"):
        build(MLP.replace('bottom: "data" top: "ip1"', 'bottom: "nope" top: "ip1"'))
    with pytest.raises(NetError, match="Top blob 'ip1' produced by multiple sources"):
        build(
            MLP.replace(
                'layer { name: "relu1"',
                'layer { name: "dup" type: "ReLU" bottom: "data" top: "ip1" }\nlayer { name: "relu1"',
            )
        )
    with pytest.raises(NetError, match="ip1"):
        build(MLP.replace("num_output: 5", "num_output: 0"))
    with pytest.raises(Exception, match="Unknown layer type: 'Bogus'"):
        build(MLP.replace('type: "ReLU"', 'type: "Bogus"'))
    with pytest.raises(NetError, match="propagate_down"):
        build(MLP.replace('top: "loss" }', 'top: "loss" propagate_down: true }'))


SHARED = """
layer { name: "input" type: "Input" top: "a" top: "b" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "ip_a" type: "InnerProduct" bottom: "a" top: "fa"
        param { name: "w" } param { name: "bias" }
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" } } }
layer { name: "ip_b" type: "InnerProduct" bottom: "b" top: "fb"
        param { name: "w" } param { name: "bias" }
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "fa" bottom: "fb" top: "loss" }
"""


def test_shared_params_share_storage_and_accumulate():
    net = build(SHARED, dtype=np.float64)
    a, b = net.layer_by_name("ip_a").blobs[0], net.layer_by_name("ip_b").blobs[0]
    np.testing.assert_array_equal(a.data, b.data)
    assert len(net.learnable_params) == 2
    assert net.param_owners == [-1, -1, 0, 1]
    a.data[0, 0] = 42.0
    assert b.data[0, 0] == 42.0
    rng = np.random.default_rng(3)
    net.blob_by_name("a").data[...] = rng.normal(size=(2, 3))
    net.blob_by_name("b").data[...] = rng.normal(size=(2, 3))
    net.forward_backward()
    # d/dW of 1/2N |W a - W b|^2 has two contributions that must add up in the one shared diff
    fa, fb = net.blob_by_name("fa").data, net.blob_by_name("fb").data
    x_a, x_b = net.blob_by_name("a").data, net.blob_by_name("b").data
    expected = ((fa - fb) / 2).T @ x_a - ((fa - fb) / 2).T @ x_b
    np.testing.assert_allclose(a.diff, expected, rtol=1e-10)


def test_shared_param_rules():
    with pytest.raises(NetError, match="Cannot share param 'w'.*shape mismatch"):
        build(SHARED.replace("num_output: 4 weight", "num_output: 5 weight", 1))
    first_lr_2 = SHARED.replace('param { name: "w" }', 'param { name: "w" lr_mult: 2 }', 1)
    both_differ = first_lr_2.replace('param { name: "w" }', 'param { name: "w" lr_mult: 3 }', 1)
    with pytest.raises(NetError, match="Shared param 'w' has mismatched lr_mult"):
        build(both_differ)
    build(first_lr_2)  # the second layer leaves lr_mult unset: it inherits the owner's
    permissive = SHARED.replace('param { name: "w" }', 'param { name: "w" share_mode: PERMISSIVE }')
    build(permissive)  # same counts: fine


def test_weights_round_trip_through_caffemodel_proto(tmp_path):
    net = build(MLP)
    other = build(MLP)
    assert not np.array_equal(net.params[0].data, other.params[0].data)
    blob = net.to_proto().SerializeToString()
    other.copy_trained_layers_from(caffe_pb2.NetParameter.FromString(blob))
    for mine, theirs in zip(net.params, other.params):
        np.testing.assert_array_equal(backend.to_host(mine.data), backend.to_host(theirs.data))


def test_copy_rejects_wrong_shapes_and_ignores_unknown_layers():
    net = build(MLP)
    saved = net.to_proto()
    saved.layer.add(name="not_here", type="ReLU")
    build(MLP).copy_trained_layers_from(saved)
    bigger = build(MLP.replace("num_output: 5", "num_output: 6"))
    with pytest.raises(NetError, match="Cannot copy param 0 weights from layer 'ip1'; shape mismatch"):
        bigger.copy_trained_layers_from(saved)


def test_debug_info_reports_every_blob():
    net = build("debug_info: true\n" + MLP)
    lines: list[str] = []
    net.logger = lines.append
    set_inputs(net)
    net.forward_backward()
    assert any(line.startswith("    [Forward] Layer ip1, top blob ip1 data:") for line in lines)
    assert any(line.startswith("    [Forward] Layer ip1, param blob 0 data:") for line in lines)
    assert any(line.startswith("    [Backward] Layer ip2, bottom blob ip1 diff:") for line in lines)
    assert any(line.startswith("    [Backward] All net params (data, diff): L1 norm = (") for line in lines)


def test_a_solver_step_with_debug_info_prints_caffes_lines_and_no_update_lines():
    # Caffe 1.0's Solver::Step with debug_info: the net's [Forward] and [Backward] lines, in Caffe's
    # wording, then the update with no "[Update]" line (its Net::Update never calls UpdateDebugInfo).
    from engine.solvers import create_solver

    param = text_format.Parse(
        'base_lr: 0.1 lr_policy: "fixed" type: "SGD" display: 1 debug_info: true max_iter: 1',
        caffe_pb2.SolverParameter(),
    )
    param.net_param.CopyFrom(text_format.Parse(MLP, caffe_pb2.NetParameter()))
    lines: list[str] = []
    solver = create_solver(param, log_fn=lines.append)
    solver.net.logger = lines.append
    solver.step(1)
    forward = re.compile(r"    \[Forward\] Layer (\w+), (top blob \w+|param blob \d+) data: [-+0-9.e]+$")
    backward = re.compile(
        r"    \[Backward\] (Layer \w+, (bottom blob \w+|param blob \d+) diff: [-+0-9.e]+"
        r"|All net params \(data, diff\): L1 norm = \([-+0-9.e]+, [-+0-9.e]+\); "
        r"L2 norm = \([-+0-9.e]+, [-+0-9.e]+\))$"
    )
    debug = [line for line in lines if line.startswith("    [")]
    assert sum(bool(forward.match(line)) for line in debug) == 10  # 6 tops, 2 weights, 2 biases
    assert sum(bool(backward.match(line)) for line in debug) == 8  # 3 bottoms, 4 params, the total
    assert len(debug) == 18 and not any("[Update]" in line for line in lines)
    solver.net.close()


def test_a_net_moves_to_another_backend_with_one_call(xp):
    net = build(MLP, dtype=np.float64)
    set_inputs(net)
    before = net.forward_backward()
    grads = [backend.to_host(p.diff).copy() for p in net.learnable_params]
    net.to(xp)
    net.clear_param_diffs()
    assert net.forward_backward() == pytest.approx(before, rel=1e-12)
    assert backend.get_array_module(net.blob_by_name("ip1").data) is xp
    for g, p in zip(grads, net.learnable_params):
        np.testing.assert_allclose(backend.to_host(p.diff), g, rtol=1e-10)
