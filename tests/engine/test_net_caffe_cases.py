"""Caffe's test_net.cpp cases, ported: wiring and lookups, backward flags, loss weights, weight
sharing, partial passes, reshaping, propagate_down, and state filtering of an all-in-one net.

The expected values are the ones Caffe's own tests assert; nets are rebuilt under one seed where
Caffe's tests call ``Caffe::set_random_seed`` so that two builds draw the same data and weights.
"""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format

from engine import rng
from engine.errors import EngineError, NetError
from engine.net import Net
from proto import caffe_pb2

SEED = 1702


def build(text: str, **kwargs) -> Net:
    return Net(text_format.Parse(text, caffe_pb2.NetParameter()), xp=np, **kwargs)


def seeded(text: str, **kwargs) -> Net:
    rng.set_random_seed(SEED)
    return build(text, **kwargs)


def tiny_net(force_backward: bool = False, accuracy: bool = False) -> str:
    text = """
    name: 'TinyTestNetwork'
    layer { name: 'data' type: 'DummyData'
      dummy_data_param { shape { dim: 5 dim: 2 dim: 3 dim: 4 } data_filler { type: 'gaussian' std: 0.01 }
                         shape { dim: 5 } data_filler { type: 'constant' value: 0 } }
      top: 'data' top: 'label' }
    layer { name: 'innerproduct' type: 'InnerProduct'
      inner_product_param { num_output: 1000 weight_filler { type: 'gaussian' std: 0.01 }
                            bias_filler { type: 'constant' value: 0 } }
      param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
      bottom: 'data' top: 'innerproduct' }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'innerproduct' bottom: 'label' top: 'top_loss' }
    """
    if accuracy:  # Caffe's test names this layer 'loss' too
        text += (
            "layer { name: 'loss' type: 'Accuracy' bottom: 'innerproduct' bottom: 'label' top: 'accuracy' }"
        )
    return text + ("force_backward: true" if force_backward else "")


def tiny_net_euclidean(force_backward: bool = False) -> str:
    text = """
    name: 'TinyTestEuclidLossNetwork'
    layer { name: 'data' type: 'DummyData'
      dummy_data_param { num: 5 channels: 2 height: 3 width: 4 num: 5 channels: 1 height: 1 width: 1
                         data_filler { type: 'gaussian' std: 0.01 } }
      top: 'data' top: 'label' }
    layer { name: 'innerproduct' type: 'InnerProduct'
      inner_product_param { num_output: 1 weight_filler { type: 'gaussian' std: 0.01 }
                            bias_filler { type: 'constant' value: 0 } }
      param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
      bottom: 'data' top: 'innerproduct' }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'innerproduct' bottom: 'label' }
    """
    return text + ("force_backward: true" if force_backward else "")


TRICKY_NET = """
name: 'TrickyTestNetwork'
layer { name: 'data' type: 'DummyData'
  dummy_data_param { num: 5 channels: 2 height: 3 width: 4 num: 5 channels: 1 height: 1 width: 1
                     data_filler { type: 'gaussian' std: 0.01 } }
  top: 'data' top: 'label' }
layer { name: 'innerproduct' type: 'InnerProduct'
  inner_product_param { num_output: 1000 weight_filler { type: 'gaussian' std: 0.01 } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
  bottom: 'data' top: 'transformed_data' }
layer { name: 'innerproduct' type: 'InnerProduct'
  inner_product_param { num_output: 1 weight_filler { type: 'gaussian' std: 0.01 } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
  bottom: 'label' top: 'transformed_label' }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'transformed_data' bottom: 'transformed_label' }
"""


def unshared_weights_net(
    loss_weight: float | None = None,
    midnet_loss_weight: float | None = None,
    force_backward: bool = False,
    bias_term: bool = False,
    lr: tuple[float, float, float, float] = (1, 2, 1, 2),  # w1, b1, w2, b2: the order of net.params
) -> str:
    def ip(index: int, extra: str) -> str:
        bias = f"param {{ lr_mult: {lr[2 * index - 1]} }}" if bias_term else ""
        return f"""
        layer {{ name: 'innerproduct{index}' type: 'InnerProduct'
          inner_product_param {{ num_output: 10 bias_term: {str(bias_term).lower()}
                                weight_filler {{ type: 'gaussian' std: 10 }} }}
          param {{ name: 'unsharedweights{index}' lr_mult: {lr[2 * index - 2]} }} {bias}
          bottom: 'data' top: 'innerproduct{index}' {extra} }}"""

    midnet = f"loss_weight: {midnet_loss_weight}" if midnet_loss_weight is not None else ""
    loss = f"loss_weight: {loss_weight}" if loss_weight is not None else ""
    return f"""
    name: 'UnsharedWeightsNetwork' {"force_backward: true" if force_backward else ""}
    layer {{ name: 'data' type: 'DummyData'
      dummy_data_param {{ num: 5 channels: 2 height: 3 width: 4
                         data_filler {{ type: 'gaussian' std: 0.01 }} }}
      top: 'data' }}
    {ip(1, midnet)}
    {ip(2, "")}
    layer {{ name: 'loss' type: 'EuclideanLoss' {loss} bottom: 'innerproduct1' bottom: 'innerproduct2' }}
    """


SHARED_WEIGHTS_NET = """
name: 'SharedWeightsNetwork'
layer { name: 'data' type: 'DummyData'
  dummy_data_param { num: 5 channels: 2 height: 3 width: 4 data_filler { type: 'gaussian' std: 0.01 } }
  top: 'data' }
layer { name: 'innerproduct1' type: 'InnerProduct'
  inner_product_param { num_output: 10 bias_term: false weight_filler { type: 'gaussian' std: 10 } }
  param { name: 'sharedweights' } bottom: 'data' top: 'innerproduct1' }
layer { name: 'innerproduct2' type: 'InnerProduct'
  inner_product_param { num_output: 10 bias_term: false weight_filler { type: 'gaussian' std: 10 } }
  param { name: 'sharedweights' } bottom: 'data' top: 'innerproduct2' }
layer { name: 'loss' type: 'EuclideanLoss' bottom: 'innerproduct1' bottom: 'innerproduct2' }
"""


def diff_data_net(shared: bool) -> str:
    names = ("sharedweights", "sharedweights") if shared else ("unsharedweights1", "unsharedweights2")
    return f"""
    name: 'DiffDataWeightsNetwork'
    layer {{ name: 'data' type: 'DummyData'
      dummy_data_param {{ num: 10 channels: 10 height: 1 width: 1 num: 10 channels: 10 height: 1 width: 1
                         data_filler {{ type: 'gaussian' std: 10 }} }}
      top: 'data1' top: 'data2' }}
    layer {{ name: 'innerproduct1' type: 'InnerProduct'
      inner_product_param {{ num_output: 10 bias_term: false
                            weight_filler {{ type: 'constant' value: 0.5 }} }}
      param {{ name: '{names[0]}' }} bottom: 'data1' top: 'innerproduct1' }}
    layer {{ name: 'innerproduct2' type: 'InnerProduct'
      inner_product_param {{ num_output: 10 bias_term: false
                            weight_filler {{ type: 'constant' value: 0.5 }} }}
      param {{ name: '{names[1]}' }} bottom: 'innerproduct1' top: 'innerproduct2' }}
    layer {{ name: 'loss' type: 'EuclideanLoss' bottom: 'data2' bottom: 'innerproduct2' }}
    """


RESHAPABLE_NET = """
name: 'ReshapableNetwork'
layer { name: 'data' type: 'Input' top: 'data' input_param { shape { dim: 1 dim: 3 dim: 100 dim: 100 } } }
layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
  convolution_param { num_output: 5 kernel_size: 3 stride: 2 weight_filler { type: 'gaussian' std: 0.01 }
                      bias_filler { type: 'constant' value: 0.2 } } }
layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'conv1' }
layer { name: 'pool1' type: 'Pooling' bottom: 'conv1' top: 'pool1'
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: 'norm1' type: 'LRN' bottom: 'pool1' top: 'norm1' lrn_param { local_size: 3 } }
layer { name: 'softmax' type: 'Softmax' bottom: 'norm1' top: 'softmax' }
"""


def skip_prop_net(skip_label: bool) -> str:
    return f"""
    name: 'SkipPropTestNetwork'
    layer {{ name: 'data' type: 'DummyData'
      dummy_data_param {{ shape {{ dim: 5 dim: 2 dim: 3 dim: 4 }} data_filler {{ type: 'gaussian' std: 0.01 }}
                         shape {{ dim: 5 }} data_filler {{ type: 'constant' value: 0 }} }}
      top: 'data' top: 'label' }}
    layer {{ name: 'silence' bottom: 'label' type: 'Silence' }}
    layer {{ name: 'innerproduct' type: 'InnerProduct'
      inner_product_param {{ num_output: 1 weight_filler {{ type: 'gaussian' std: 0.01 }}
                            bias_filler {{ type: 'constant' value: 0 }} }}
      param {{ lr_mult: 1 decay_mult: 1 }} param {{ lr_mult: 2 decay_mult: 0 }}
      bottom: 'data' top: 'innerproduct' }}
    layer {{ name: 'ip_fake_labels' type: 'InnerProduct'
      inner_product_param {{ num_output: 1 weight_filler {{ type: 'gaussian' std: 0.01 }}
                            bias_filler {{ type: 'constant' value: 0 }} }}
      bottom: 'data' top: 'fake_labels' }}
    layer {{ name: 'argmax' bottom: 'fake_labels' top: 'label_argmax' type: 'ArgMax' }}
    layer {{ name: 'loss' bottom: 'innerproduct' bottom: 'label_argmax'
      propagate_down: true propagate_down: {str(not skip_label).lower()}
      top: 'cross_entropy_loss' type: 'SigmoidCrossEntropyLoss' loss_weight: 0.1 }}
    """


def force_prop_net(force: bool) -> str:
    return f"""
    name: 'ForcePropTestNetwork'
    layer {{ name: 'data' type: 'DummyData'
      dummy_data_param {{ shape {{ dim: 5 dim: 2 dim: 3 dim: 4 }} data_filler {{ type: 'gaussian' std: 0.01 }}
                         shape {{ dim: 5 }} data_filler {{ type: 'constant' value: 0 }} }}
      top: 'data' top: 'label' }}
    layer {{ name: 'innerproduct' type: 'InnerProduct'
      inner_product_param {{ num_output: 1 weight_filler {{ type: 'gaussian' std: 0.01 }} }}
      bottom: 'data' top: 'innerproduct' {"propagate_down: true" if force else ""} }}
    layer {{ name: 'loss' bottom: 'innerproduct' bottom: 'label' top: 'cross_entropy_loss'
      type: 'SigmoidCrossEntropyLoss' }}
    """


def diffs(blobs) -> list[np.ndarray]:
    return [np.array(b.diff, copy=True) for b in blobs]


# --- lookups ---------------------------------------------------------------------------------------


def test_has_and_get_blob_and_layer():
    net = build(tiny_net())
    assert [net.has_blob(n) for n in ("data", "label", "innerproduct", "loss", "top_loss")] == [
        True,
        True,
        True,
        False,
        True,
    ]
    for index, name in enumerate(["data", "label", "innerproduct"]):
        assert net.blob_by_name(name) is net.blob_list[index]
    assert net.blob_by_name("top_loss") is net.blob_list[3]
    with pytest.raises(NetError, match="Unknown blob name 'loss'"):
        net.blob_by_name("loss")
    assert [net.has_layer(n) for n in ("data", "innerproduct", "loss", "label")] == [True, True, True, False]
    for index, name in enumerate(["data", "innerproduct", "loss"]):
        assert net.layer_by_name(name) is net.layers[index]
    with pytest.raises(NetError, match="Unknown layer name 'label'"):
        net.layer_by_name("label")


def test_a_layer_name_used_twice_finds_the_last_layer_as_caffes_index_does():
    net = build(tiny_net(accuracy=True))
    middle = ["label_data_1_split", "innerproduct", "innerproduct_innerproduct_0_split"]
    assert net.layer_names == ["data", *middle, "loss", "loss"]
    assert net.layer_by_name("loss") is net.layers[5] and net.layers[5].type == "Accuracy"


def test_outputs_are_the_unconsumed_blobs_in_name_order():
    net = build("""
        layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 } } }
        layer { name: 'z' type: 'ReLU' bottom: 'x' top: 'zeta' }
        layer { name: 'm' type: 'TanH' bottom: 'x' top: 'mu' }
        layer { name: 'a' type: 'Sigmoid' bottom: 'x' top: 'Alpha' }
    """)
    assert net.output_blob_names == ["Alpha", "mu", "zeta"]  # std::set<string>: byte order, capitals first
    assert net.input_blob_names == ["x"]


def test_loss_layers_without_a_top_get_an_anonymous_one():
    net = build("""
        layer { name: 'in' type: 'Input' top: 'x' top: 'y' input_param { shape { dim: 2 dim: 3 } } }
        layer { name: 'l1' type: 'EuclideanLoss' bottom: 'x' bottom: 'y' }
        layer { name: 'l2' type: 'EuclideanLoss' bottom: 'x' bottom: 'y' loss_weight: 2 }
    """)
    assert net.blob_names[-2:] == ["(automatic)", "(automatic)"]
    assert net.blob_loss_weights[-2:] == [1, 2] and net.output_blob_names == []  # never an output
    assert net.has_blob("(automatic)") and net.blob_by_name("(automatic)") is net.blob_list[-1]
    net.blob_by_name("x").data[...] = [[1, 2, 3], [0, 0, 0]]
    assert net.forward_from_to() == pytest.approx(3 * 14 / 4)  # (1 + 2) x sum(d^2) / 2N


# --- backward flags ----------------------------------------------------------------------------------


def test_bottom_need_backward():
    assert build(tiny_net()).bottom_need_backward == [[], [False], [True, False]]


def test_bottom_need_backward_force():
    assert build(tiny_net(force_backward=True)).bottom_need_backward == [[], [True], [True, False]]


def test_bottom_need_backward_euclidean_force():
    # EuclideanLoss lets force_backward reach both of its bottoms
    assert build(tiny_net_euclidean(force_backward=True)).bottom_need_backward == [[], [True], [True, True]]


def test_bottom_need_backward_tricky():
    net = build(TRICKY_NET)
    # the label's InnerProduct has weights under it, so SoftmaxWithLoss says its label bottom needs
    # backward (Caffe's test notes that a backward pass would then fail)
    assert net.bottom_need_backward == [[], [False], [False], [True, True]]


def test_skip_propagate_down():
    net = build(skip_prop_net(skip_label=False))
    loss = net.layer_names.index("loss")
    assert net.bottom_need_backward[loss][1] is True
    for name, needs in zip(net.layer_names, net.layer_need_backward):
        assert needs == ("data" not in name and name != "silence"), name
    net = build(skip_prop_net(skip_label=True))
    assert net.bottom_need_backward[loss][1] is False
    for name, needs in zip(net.layer_names, net.layer_need_backward):
        assert needs == (name in ("innerproduct", "loss")), name


def test_force_propagate_down():
    for force in (False, True):
        net = build(force_prop_net(force))
        assert net.layer_names == ["data", "innerproduct", "loss"]
        assert net.bottom_need_backward == [[], [force], [True, False]]
        assert net.layer_need_backward == [False, True, True]


def test_propagate_down_must_be_given_once_per_bottom():
    with pytest.raises(NetError, match="propagate_down"):
        build(force_prop_net(False).replace("top: 'cross_entropy_loss'", "propagate_down: true top: 'x'"))


def test_backward_with_an_accuracy_layer_runs():
    net = seeded(tiny_net(accuracy=True))
    assert net.has_blob("accuracy")
    net.forward_backward()


# --- loss weights ------------------------------------------------------------------------------------

LOSS_WEIGHTS = [2, 0, 1, -1, -2.5, 3.7]
MARGIN = 1e-4


def test_loss_weight_scales_the_loss_and_every_gradient():
    base = seeded(unshared_weights_net(force_backward=True))
    loss = base.forward_backward()
    assert abs(loss) >= 1e-2
    blob_grads, param_grads = diffs(base.blob_list), diffs(base.params)
    for weight in LOSS_WEIGHTS:
        net = seeded(unshared_weights_net(loss_weight=weight, force_backward=True))
        margin = MARGIN * abs(weight)
        assert net.forward_backward() == pytest.approx(loss * weight, abs=margin)
        for expected, got in zip(blob_grads + param_grads, diffs(net.blob_list) + diffs(net.params)):
            np.testing.assert_allclose(got, expected * weight, rtol=0, atol=margin)


def test_loss_weight_mid_net():
    base = seeded(unshared_weights_net(loss_weight=0, midnet_loss_weight=1, force_backward=True))
    loss = base.forward_backward()
    data_grad = np.array(base.blob_by_name("data").diff)
    assert abs(loss) >= 1e-2
    for weight in LOSS_WEIGHTS:
        net = seeded(unshared_weights_net(loss_weight=0, midnet_loss_weight=weight, force_backward=True))
        margin = MARGIN * abs(weight)
        assert net.forward_backward() == pytest.approx(loss * weight, abs=margin)
        np.testing.assert_allclose(net.blob_by_name("data").diff, data_grad * weight, rtol=0, atol=margin)


def test_combo_loss_weight():
    def run(main: float, midnet: float) -> tuple[float, Net]:
        net = seeded(unshared_weights_net(loss_weight=main, midnet_loss_weight=midnet, force_backward=True))
        return net.forward_backward(), net

    loss, base = run(1, 1)
    grads = diffs(base.blob_list)
    # the main loss weight: every blob gradient changes linearly, except the split top that carries
    # the midnet loss (its diff is that loss weight)
    loss_2, net_2 = run(2, 1)
    loss_3, net_3 = run(3, 1)
    for name, g1, g2, g3 in zip(base.blob_names, grads, diffs(net_2.blob_list), diffs(net_3.blob_list)):
        if name == "innerproduct1_innerproduct1_0_split_0":
            assert np.all(g2 - g1 == 0) and np.all(g3 - g1 == 0), name
        else:
            assert np.all(np.abs(g2 - g1) > 1e-4), name
            np.testing.assert_allclose(g3 - g1, 2 * (g2 - g1), rtol=0, atol=MARGIN, err_msg=name)
    assert abs(loss_2 - loss) > 1e-4 and loss_3 - loss == pytest.approx(2 * (loss_2 - loss), abs=MARGIN)
    # the midnet loss weight: only the blobs on innerproduct1's path to the data change
    loss_2, net_2 = run(1, 2)
    loss_3, net_3 = run(1, 3)
    changes = {"innerproduct1", "innerproduct1_innerproduct1_0_split_0", "data_data_0_split_0", "data"}
    for name, g1, g2, g3 in zip(base.blob_names, grads, diffs(net_2.blob_list), diffs(net_3.blob_list)):
        if name in changes:
            assert np.all(np.abs(g2 - g1) > 1e-4), name
            np.testing.assert_allclose(g3 - g1, 2 * (g2 - g1), rtol=0, atol=MARGIN, err_msg=name)
        else:
            assert np.all(g2 - g1 == 0) and np.all(g3 - g1 == 0), name
    assert abs(loss_2 - loss) > 1e-4 and loss_3 - loss == pytest.approx(2 * (loss_2 - loss), abs=MARGIN)


def test_loss_layers_weigh_one_by_default_and_need_one_weight_per_top():
    net = build(tiny_net_euclidean())
    assert net.blob_loss_weights == [0, 0, 0, 1]
    assert list(net.layers[-1].param.loss_weight) == [1.0]  # written into the layer, as LossLayer does
    two_tops = tiny_net().replace("top: 'top_loss' }", "top: 'top_loss' top: 'prob' }")
    with pytest.raises(EngineError, match="loss_weight must be unspecified or specified once per top blob"):
        build(two_tops)
    net = build(two_tops.replace("top: 'prob' }", "top: 'prob' loss_weight: 1 loss_weight: 0 }"))
    assert net.blob_loss_weights[-2:] == [1, 0] and net.output_blob_names == ["prob", "top_loss"]


# --- weight sharing ----------------------------------------------------------------------------------


def test_unshared_weights_data_net():
    assert seeded(unshared_weights_net()).forward_from_to() > 0


def test_shared_weights_data_net():
    assert seeded(SHARED_WEIGHTS_NET).forward_from_to() == pytest.approx(0, abs=1e-6)


def test_unshared_weights_diff_net():
    net = seeded(unshared_weights_net())
    net.forward_backward()
    grad1 = net.layer_by_name("innerproduct1").blobs[0].diff
    grad2 = net.layer_by_name("innerproduct2").blobs[0].diff
    assert np.all(np.abs(grad1) > 0)
    np.testing.assert_allclose(grad2, -grad1, rtol=1e-6)


def test_shared_weights_diff_net():
    net = seeded(SHARED_WEIGHTS_NET)
    assert net.forward_backward() == pytest.approx(0, abs=1e-6)
    for name in ("innerproduct1", "innerproduct2"):
        np.testing.assert_allclose(net.layer_by_name(name).blobs[0].diff, 0, atol=1e-6)


def test_shared_weights_update():
    net = seeded(diff_data_net(shared=True))
    assert net.layer_names[1:3] == ["innerproduct1", "innerproduct2"]
    w1, w2 = net.layers[1].blobs[0], net.layers[2].blobs[0]
    assert np.shares_memory(w1.data, w2.data) and np.shares_memory(w1.diff, w2.diff)
    net.forward_backward()
    shared_data, shared_diff = np.array(w1.data), np.array(w1.diff)
    assert np.all(shared_diff != 0)
    net.update()
    np.testing.assert_array_equal(w1.data, shared_data - shared_diff)
    assert np.shares_memory(w1.data, w2.data)

    net = seeded(diff_data_net(shared=False))
    w1, w2 = net.layers[1].blobs[0], net.layers[2].blobs[0]
    assert not np.shares_memory(w1.data, w2.data) and not np.shares_memory(w1.diff, w2.diff)
    net.forward_backward()
    data1, data2, diff1, diff2 = (np.array(a) for a in (w1.data, w2.data, w1.diff, w2.diff))
    assert np.all(diff1 != 0) and np.all(diff2 != 0) and np.all(diff1 != diff2)
    np.testing.assert_allclose(diff1 + diff2, shared_diff, rtol=1e-6)  # the shared diff is their sum
    net.update()
    np.testing.assert_array_equal(w1.data, data1 - diff1)
    np.testing.assert_array_equal(w2.data, data2 - diff2)
    assert np.all(w1.data != w2.data)


def test_shared_weights_resume():
    net = seeded(diff_data_net(shared=True))
    net.forward_backward()
    net.update()
    trained = np.array(net.layers[1].blobs[0].data)
    snapshot = net.to_proto()
    resumed = seeded(diff_data_net(shared=True))
    resumed.copy_trained_layers_from(snapshot)
    w1, w2 = resumed.layers[1].blobs[0], resumed.layers[2].blobs[0]
    assert w1 is not w2 and np.shares_memory(w1.data, w2.data) and np.shares_memory(w1.diff, w2.diff)
    np.testing.assert_array_equal(w1.data, trained)


def test_param_propagate_down_follows_lr_mult():
    def asums(lr) -> list[float]:
        net = seeded(unshared_weights_net(bias_term=True, lr=lr))
        net.forward_backward()
        assert len(net.params) == 4
        return [float(np.abs(p.diff).sum()) for p in net.params]

    learned = asums((1, 2, 1, 2))
    assert all(a > 1e-3 for a in learned)
    assert asums((2, 4, 2, 4)) == pytest.approx(learned, rel=1e-6)  # other nonzero rates: same gradients
    partly = asums((1, 0, 0, 1))
    assert partly[1] == partly[2] == 0 and [partly[0], partly[3]] == pytest.approx([learned[0], learned[3]])
    other = asums((0, 1, 1, 0))
    assert other[0] == other[3] == 0 and [other[1], other[2]] == pytest.approx([learned[1], learned[2]])


def test_shared_param_lr_and_decay_rules():
    shared = SHARED_WEIGHTS_NET
    first_sets = shared.replace(
        "param { name: 'sharedweights' }", "param { name: 'sharedweights' lr_mult: 3 }", 1
    )
    net = build(first_sets)
    assert net.params_lr == [3.0] and net.has_params_lr == [True] and net.has_params_decay == [False]
    assert net.param_owners == [-1, 0] and net.learnable_param_ids == [0, 0]
    assert net.param_names_index == {"sharedweights": 0} and net.param_display_names == ["sharedweights"] * 2
    second_sets = shared.replace(
        "param { name: 'sharedweights' } bottom: 'data' top: 'innerproduct2'",
        "param { name: 'sharedweights' decay_mult: 0.5 } bottom: 'data' top: 'innerproduct2'",
    )
    net = build(second_sets)  # the owner left decay_mult unset: the sharer's value is taken
    assert net.params_weight_decay == [0.5] and net.has_params_decay == [True] and net.params_lr == [1.0]
    both = first_sets.replace("param { name: 'sharedweights' }", "param { name: 'sharedweights' lr_mult: 2 }")
    with pytest.raises(NetError, match="Shared param 'sharedweights' has mismatched lr_mult"):
        build(both)
    decay = second_sets.replace(
        "param { name: 'sharedweights' }", "param { name: 'sharedweights' decay_mult: 1 }", 1
    )
    with pytest.raises(NetError, match="Shared param 'sharedweights' has mismatched decay_mult"):
        build(decay)


SHARE_MODES = """
layer { name: 'in' type: 'Input' top: 'a' top: 'b'
        input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 6 } } }
layer { name: 'ip_a' type: 'InnerProduct' bottom: 'a' top: 'fa' param { name: 'w' }
        inner_product_param { num_output: 4 bias_term: false } }
layer { name: 'ip_b' type: 'InnerProduct' bottom: 'b' top: 'fb' param { name: 'w' MODE }
        inner_product_param { num_output: OUT bias_term: false } }
"""


def test_strict_sharing_needs_equal_shapes_permissive_equal_counts():
    with pytest.raises(
        NetError, match=r"Cannot share param 'w' owned by layer 'ip_a' with layer 'ip_b'; shape"
    ):
        build(SHARE_MODES.replace("MODE", "").replace("OUT", "2"))  # 4x3 and 2x6: same count
    net = build(SHARE_MODES.replace("MODE", "share_mode: PERMISSIVE").replace("OUT", "2"))
    assert net.layers[2].blobs[0].shape == (2, 6) and np.shares_memory(net.params[0].data, net.params[1].data)
    with pytest.raises(NetError, match="count mismatch"):
        build(SHARE_MODES.replace("MODE", "share_mode: PERMISSIVE").replace("OUT", "3"))


def test_too_many_param_specs():
    text = SHARE_MODES.replace("MODE", "} param {").replace("OUT", "2")
    with pytest.raises(NetError, match="Too many params specified for layer 'ip_b'"):
        build(text)


# --- partial passes, reshaping, update -------------------------------------------------------------


def test_from_to():
    net = seeded(tiny_net())
    net.forward_from_to()
    net.backward()
    data_diff = np.array(net.blob_by_name("data").diff)
    loss_blob = net.output_blobs[0]
    loss = np.array(loss_blob.data)
    last = len(net.layers) - 1
    for i in range(1, len(net.layers)):  # layer 0 is skipped to keep the same data
        net.forward_from_to(1, i)
        if i < last:
            net.forward_from(i + 1)
        assert loss_blob.data == loss
    for i in range(1, len(net.layers)):
        net.backward_to(i)
        net.backward_from(i - 1)
        np.testing.assert_array_equal(net.blob_by_name("data").diff, data_diff)


def test_partial_passes_refuse_layers_outside_the_net():
    net = build(tiny_net())
    with pytest.raises(NetError, match="layers 0..2"):
        net.forward_from_to(0, 3)
    with pytest.raises(NetError, match="layers 0..2"):
        net.forward_from_to(-1, 1)
    with pytest.raises(NetError, match="layers 0..2"):
        net.backward_from_to(3, 0)
    with pytest.raises(NetError, match="layers 0..2"):
        net.backward_from_to(2, -1)
    assert net.forward_from_to(2, 1) == 0  # an empty range is no error


def test_reshape():
    generator = np.random.default_rng(SEED)
    blob1 = generator.normal(size=(2, 3, 12, 10)).astype(np.float32)
    blob2 = generator.normal(size=(4, 3, 9, 11)).astype(np.float32)
    net = seeded(RESHAPABLE_NET)
    data, out = net.input_blobs[0], net.output_blobs[0]
    outputs = []
    for values in (blob1, blob2, blob1, blob2):
        data.reshape(values.shape)
        data.data[...] = values
        net.forward_from_to()
        net.backward()
        outputs.append(np.array(out.data))
    np.testing.assert_allclose(outputs[2], outputs[0], rtol=1e-6)
    np.testing.assert_allclose(outputs[3], outputs[1], rtol=1e-6)
    assert outputs[0].shape[0] == 2 and outputs[1].shape[0] == 4
    assert outputs[0].shape[2:] != outputs[1].shape[2:]


# --- phase, level and stages -------------------------------------------------------------------------

ALL_IN_ONE = """
name: 'All-in-one Network'
layer { name: 'train-data' type: 'DummyData' top: 'data' top: 'label'
  dummy_data_param { shape { dim: 1 dim: 10 } shape { dim: 1 dim: 1 } }
  include { phase: TRAIN stage: 'train' } }
layer { name: 'val-data' type: 'DummyData' top: 'data' top: 'label'
  dummy_data_param { shape { dim: 1 dim: 10 } shape { dim: 1 dim: 1 } }
  include { phase: TEST stage: 'val' } }
layer { name: 'deploy-data' type: 'Input' top: 'data' input_param { shape { dim: 1 dim: 10 } }
  include { phase: TEST stage: 'deploy' } }
layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip' inner_product_param { num_output: 2 } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss'
  include { phase: TRAIN stage: 'train' } include { phase: TEST stage: 'val' } }
"""


@pytest.mark.parametrize(
    "phase,stage,layers",
    [
        (caffe_pb2.TRAIN, "train", ["train-data", "ip", "loss"]),
        (caffe_pb2.TEST, "val", ["val-data", "ip", "loss"]),
        (caffe_pb2.TEST, "deploy", ["deploy-data", "ip"]),
    ],
)
def test_all_in_one_net(phase, stage, layers):
    net = build(ALL_IN_ONE, phase=phase, stages=[stage])
    assert net.layer_names == layers
    assert all(layer.phase == phase for layer in net.layers)


def test_stages_given_to_the_net_add_to_the_files_own():
    text = "state { stage: 'deploy' }\n" + ALL_IN_ONE.replace("stage: 'deploy'", "stage: 'deploy' stage: 'x'")
    assert build(text, phase=caffe_pb2.TEST, stages=["x"]).layer_names == ["deploy-data", "ip"]
    with pytest.raises(NetError, match="Unknown bottom blob 'data'"):  # 'deploy' alone meets no rule
        build(text, phase=caffe_pb2.TEST, stages=[])


def test_level_given_to_the_net_replaces_the_files_own():
    text = "state { level: 5 }\n" + ALL_IN_ONE.replace(
        "include { phase: TEST stage: 'deploy' }", "include { min_level: 3 }"
    )
    assert "deploy-data" not in build(text, phase=caffe_pb2.TEST, level=0, stages=["val"]).layer_names
    with pytest.raises(NetError, match="Top blob 'data' produced by multiple sources"):
        build(text, phase=caffe_pb2.TEST, stages=["val"])  # level 5 kept: both data layers


def test_an_in_place_layer_after_another_consumer_is_no_longer_in_place():
    # InsertSplits rewires the ReLU's bottom to a split top, so its top 'x' now names a second producer
    text = """
        layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 } } }
        layer { name: 'first' type: 'TanH' bottom: 'x' top: 't' }
        layer { name: 'relu' type: 'ReLU' bottom: 'x' top: 'x' }
    """
    with pytest.raises(NetError, match="Top blob 'x' produced by multiple sources"):
        build(text)
    relu_first = build("""
        layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 } } }
        layer { name: 'relu' type: 'ReLU' bottom: 'x' top: 'x' }
        layer { name: 'then' type: 'TanH' bottom: 'x' top: 't' }
    """)  # each version of 'x' has one consumer: no split, the ReLU works in place
    assert relu_first.layer_names == ["in", "relu", "then"] and relu_first.blob_names == ["x", "t"]
