"""LSTM and RNN against the net Caffe 1.0 unrolls them into, run by our own Net.

Caffe's RecurrentLayer does not compute anything itself: at set-up it writes a NetParameter (Input
layers for x, cont, x_static and the initial states, a Slice of cont and of the transformed x over
the timesteps, InnerProduct layers sharing their weights by ParamSpec name, a Scale by cont_t, an
Eltwise sum, LSTMUnit or TanH per step, a Concat of the outputs, a pseudo-loss per output), builds
a Net of it and runs that. ``unrolled_net_param`` below writes that NetParameter from a reading of
recurrent_layer.cpp (LayerSetUp), lstm_layer.cpp and rnn_layer.cpp (FillUnrolledNet); ``Unrolled``
plays RecurrentLayer's part around it (Forward_cpu's copy of the final states into the initial
ones, Backward_cpu's BackwardFrom the layer before the pseudo-losses, the diff sharing of x and
x_static only). Our direct LSTM/RNN layers must give the same outputs, bottom diffs and parameter
diffs, with the same parameter values, over several forward/backward calls.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.blob import Blob
from engine.net import Net
from engine.testing import blobs, host, make_layer
from proto import caffe_pb2

HIDDEN = 3
FILLERS = 'weight_filler { type: "gaussian" std: 0.6 } bias_filler { type: "gaussian" std: 0.5 }'


# --- the unrolled net, as Caffe 1.0 writes it ---------------------------------------------------
def _layer(net, kind, name="", bottoms=(), tops=()):
    layer = net.layer.add(type=kind, name=name)
    layer.bottom.extend(bottoms)
    layer.top.extend(tops)
    return layer


def _inner_product(net, name, outputs, bottom, top, params, axis=2, propagate=False):
    layer = _layer(net, "InnerProduct", name, [bottom], [top])
    layer.inner_product_param.num_output = outputs
    layer.inner_product_param.bias_term = len(params) == 2
    layer.inner_product_param.axis = axis
    for param in params:
        layer.param.add(name=param)
    if propagate:  # Caffe sets propagate_down on the layers reading x and x_static, the net's inputs
        layer.propagate_down.append(True)
    return layer


def _slice(net, name, bottom):
    layer = _layer(net, "Slice", name, [bottom])
    layer.slice_param.axis = 0
    return layer


def _static_transform(net, prefix, outputs):
    """x_static through its own weights, then reshaped to one timestep: (1, N, outputs)."""
    _inner_product(
        net, f"{prefix}_x_static", outputs, "x_static", f"{prefix}_x_static_preshape",
        [f"{prefix}_static"], axis=1, propagate=True,
    )  # fmt: skip
    reshape = _layer(
        net, "Reshape", f"{prefix}_x_static_reshape", [f"{prefix}_x_static_preshape"], [f"{prefix}_x_static"]
    )
    reshape.reshape_param.shape.dim.extend([1, -1, outputs])


def _fill_lstm(net, steps, streams, hidden, static):
    gates = 4 * hidden
    states = _layer(net, "Input", tops=["c_0", "h_0"])
    for _ in range(2):
        states.input_param.shape.add(dim=[1, streams, hidden])
    cont_slice = _slice(net, "cont_slice", "cont")
    _inner_product(net, "x_transform", gates, "x", "W_xc_x", ["W_xc", "b_c"], propagate=True)
    if static:
        _static_transform(net, "W_xc", gates)
    x_slice = _slice(net, "W_xc_x_slice", "W_xc_x")
    concat = caffe_pb2.LayerParameter(name="h_concat", type="Concat", top=["h"])
    concat.concat_param.axis = 0
    for t in range(1, steps + 1):
        cont_slice.top.append(f"cont_{t}")
        x_slice.top.append(f"W_xc_x_{t}")
        scale = _layer(net, "Scale", f"h_conted_{t - 1}", [f"h_{t - 1}", f"cont_{t}"], [f"h_conted_{t - 1}"])
        scale.scale_param.axis = 0
        _inner_product(net, f"transform_{t}", gates, f"h_conted_{t - 1}", f"W_hc_h_{t - 1}", ["W_hc"])
        summed = [f"W_hc_h_{t - 1}", f"W_xc_x_{t}"] + (["W_xc_x_static"] if static else [])
        _layer(net, "Eltwise", f"gate_input_{t}", summed, [f"gate_input_{t}"])  # SUM is the default
        _layer(
            net, "LSTMUnit", f"unit_{t}", [f"c_{t - 1}", f"gate_input_{t}", f"cont_{t}"], [f"c_{t}", f"h_{t}"]
        )
        concat.bottom.append(f"h_{t}")
    _layer(net, "Split", bottoms=[f"c_{steps}"], tops=["c_T"])  # unnamed in Caffe too
    net.layer.add().CopyFrom(concat)


def _fill_rnn(net, steps, streams, hidden, static):
    states = _layer(net, "Input", tops=["h_0"])
    states.input_param.shape.add(dim=[1, streams, hidden])
    cont_slice = _slice(net, "cont_slice", "cont")
    _inner_product(net, "x_transform", hidden, "x", "W_xh_x", ["W_xh", "b_h"], propagate=True)
    if static:
        _static_transform(net, "W_xh", hidden)
    x_slice = _slice(net, "W_xh_x_slice", "W_xh_x")
    concat = caffe_pb2.LayerParameter(name="o_concat", type="Concat", top=["o"])
    concat.concat_param.axis = 0
    for t in range(1, steps + 1):
        cont_slice.top.append(f"cont_{t}")
        x_slice.top.append(f"W_xh_x_{t}")
        scale = _layer(net, "Scale", f"h_conted_{t - 1}", [f"h_{t - 1}", f"cont_{t}"], [f"h_conted_{t - 1}"])
        scale.scale_param.axis = 0
        _inner_product(net, f"W_hh_h_{t - 1}", hidden, f"h_conted_{t - 1}", f"W_hh_h_{t - 1}", ["W_hh"])
        summed = [f"W_hh_h_{t - 1}", f"W_xh_x_{t}"] + (["W_xh_x_static"] if static else [])
        _layer(net, "Eltwise", f"h_input_sum_{t}", summed, [f"h_neuron_input_{t}"])
        _layer(net, "TanH", f"h_neuron_{t}", [f"h_neuron_input_{t}"], [f"h_{t}"])
        _inner_product(net, f"W_ho_h_{t}", hidden, f"h_{t}", f"W_ho_h_{t}", ["W_ho", "b_o"])
        _layer(net, "TanH", f"o_neuron_{t}", [f"W_ho_h_{t}"], [f"o_{t}"])
        concat.bottom.append(f"o_{t}")
    net.layer.add().CopyFrom(concat)


def unrolled_net_param(kind, layer_name, x_shape, static_shape, hidden=HIDDEN):
    """The NetParameter of Caffe's RecurrentLayer::LayerSetUp with the kind's FillUnrolledNet."""
    steps, streams = x_shape[:2]
    net = caffe_pb2.NetParameter()
    inputs = _layer(net, "Input", tops=["x", "cont"])
    inputs.input_param.shape.add(dim=x_shape)
    inputs.input_param.shape.add(dim=[steps, streams])
    if static_shape is not None:
        inputs.top.append("x_static")
        inputs.input_param.shape.add(dim=static_shape)
    fill = _fill_lstm if kind == "LSTM" else _fill_rnn
    fill(net, steps, streams, hidden, static_shape is not None)
    for layer in net.layer:  # every layer, the unnamed ones too, takes the layer's name as prefix
        layer.name = f"{layer_name}_{layer.name}"
    output = "h" if kind == "LSTM" else "o"
    loss = _layer(net, "Reduction", f"{output}_pseudoloss", [output], [f"{output}_pseudoloss"])
    loss.loss_weight.append(1)
    return net


class Unrolled:
    """RecurrentLayer's part around the unrolled net: what Forward_cpu and Backward_cpu do."""

    def __init__(self, kind, x_shape, static_shape=None, expose=False, dtype=np.float64, xp=np):
        self.kind, self.expose, self.static = kind, expose, static_shape is not None
        self.net = Net(unrolled_net_param(kind, "rec", x_shape, static_shape), dtype=dtype, xp=xp)
        self.xp = xp
        self.output = "h" if kind == "LSTM" else "o"
        steps = x_shape[0]
        self.recur_in = ["h_0", "c_0"] if kind == "LSTM" else ["h_0"]
        self.recur_out = [f"h_{steps}", "c_T"] if kind == "LSTM" else [f"h_{steps}"]
        self.last = len(self.net.layers) - 2  # the pseudo-loss is never run
        assert self.net.layer_names[-1] == f"{self.output}_pseudoloss"

    def blob(self, name) -> Blob:
        return self.net.blob_by_name(name)

    @property
    def params(self) -> list[Blob]:
        """The layer's blobs in Caffe: the unrolled net's parameters that no other one owns."""
        return [p for p, owner in zip(self.net.params, self.net.param_owners) if owner == -1]

    def forward(self, x, cont, x_static=None, states=()):
        if self.expose:
            for name, state in zip(self.recur_in, states):
                self.blob(name).data[...] = self.xp.asarray(state)
        else:  # the final states of the last pass become the initial ones, whatever cont says
            for source, target in zip(self.recur_out, self.recur_in):
                self.blob(target).data[...] = self.blob(source).data
        self.blob("x").data[...] = self.xp.asarray(x)
        self.blob("cont").data[...] = self.xp.asarray(cont)
        if x_static is not None:
            self.blob("x_static").data[...] = self.xp.asarray(x_static)
        self.net.forward_from_to(0, self.last)
        finals = [host(self.blob(name).data).copy() for name in self.recur_out]
        return host(self.blob(self.output).data).copy(), finals

    def backward(self, dy):
        self.blob(self.output).diff[...] = self.xp.asarray(dy)
        self.net.backward_from_to(self.last, 0)
        dx = host(self.blob("x").diff).copy()
        dx_static = host(self.blob("x_static").diff).copy() if self.static else None
        return dx, dx_static


# --- the comparison -----------------------------------------------------------------------------
def layer_text(kind, expose):
    extra = " expose_hidden: true" if expose else ""
    return f'name: "rec" type: "{kind}" recurrent_param {{ num_output: {HIDDEN} {FILLERS}{extra} }}'


def compare(
    xp,
    kind,
    steps,
    streams,
    conts,
    static=False,
    expose=False,
    dtype=np.float64,
    feature_shape=(2, 2),
    propagate=True,
):
    """Run both over len(conts) forward/backward calls without clearing any diff; assert they agree."""
    tol = {"rtol": 1e-10, "atol": 1e-12} if dtype == np.float64 else {"rtol": 2e-5, "atol": 2e-6}
    rand = np.random.default_rng(steps * 100 + streams * 10 + static * 2 + expose)
    num_states = 2 if kind == "LSTM" else 1
    x_shape = (steps, streams, *feature_shape)
    static_shape = (streams, 3, 1) if static else None

    def draw(shape, scale=1.0):
        return (scale * rand.standard_normal(shape)).astype(dtype)

    x, cont = Blob(x_shape, dtype, xp), Blob((steps, streams), dtype, xp)
    bottom = [x, cont] + ([Blob(static_shape, dtype, xp)] if static else [])
    bottom += [Blob((1, streams, HIDDEN), dtype, xp) for _ in range(num_states if expose else 0)]
    top = blobs(1 + (num_states if expose else 0), xp, dtype)
    layer = make_layer(layer_text(kind, expose), xp, dtype)
    layer.setup(bottom, top)
    unrolled = Unrolled(kind, x_shape, static_shape, expose, dtype, xp)
    assert [p.shape for p in unrolled.params] == [b.shape for b in layer.blobs]  # Caffe's order
    for target, source in zip(unrolled.params, layer.blobs):
        target.data[...] = source.data

    for call, flags in enumerate(conts):
        arrays = [draw(x_shape), np.asarray(flags, dtype)]
        arrays += [draw(static_shape)] if static else []
        arrays += [draw((1, streams, HIDDEN), 0.8) for _ in range(num_states if expose else 0)]
        for blob, array in zip(bottom, arrays):
            blob.data[...] = xp.asarray(array)
        layer.reshape(bottom, top)
        layer.forward(bottom, top)
        states = arrays[2 + static :]
        want, finals = unrolled.forward(arrays[0], arrays[1], arrays[2] if static else None, states)
        np.testing.assert_allclose(host(top[0].data), want, **tol, err_msg=f"output, call {call}")
        for blob, final in zip(top[1:], finals):
            np.testing.assert_allclose(host(blob.data), final, **tol, err_msg=f"h_T/c_T, call {call}")

        dy = draw(want.shape)
        top[0].diff[...] = xp.asarray(dy)
        for blob in top[1:]:  # the exposed final states' diffs go nowhere in Caffe
            blob.diff[...] = 7.0
        for blob in bottom:
            blob.diff[...] = -5.0
        wanted = [propagate, False] + [propagate] * static + [True] * (num_states if expose else 0)
        layer.backward(top, wanted, bottom)
        dx, dx_static = unrolled.backward(dy)
        np.testing.assert_allclose(host(x.diff), dx, **tol, err_msg=f"x diff, call {call}")
        if static:
            np.testing.assert_allclose(host(bottom[2].diff), dx_static, **tol, err_msg="x_static diff")
        assert (host(cont.diff) == -5.0).all()  # cont's diff is shared with nothing in Caffe
        for blob in bottom[2 + static :]:  # h_0 and c_0: only their data is shared with the net
            assert (host(blob.diff) == -5.0).all()
        for k, (mine, theirs) in enumerate(zip(layer.blobs, unrolled.params)):
            np.testing.assert_allclose(
                host(mine.diff), host(theirs.diff), **tol, err_msg=f"param {k} diff, call {call}"
            )
    return layer, unrolled


def cont_pattern(steps, streams):
    """Each stream starts at t = 0; stream 1 starts again mid-sequence, stream 2 at the last step."""
    cont = np.ones((steps, streams))
    cont[0] = 0
    if steps > 2 and streams > 1:
        cont[steps // 2, 1] = 0
    if steps > 1 and streams > 2:
        cont[-1, 2] = 0
    return cont


@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
@pytest.mark.parametrize("static", [False, True], ids=["plain", "static"])
@pytest.mark.parametrize("expose", [False, True], ids=["hidden", "exposed"])
@pytest.mark.parametrize("steps, streams", [(1, 1), (1, 3), (5, 3)])
def test_direct_layer_matches_the_unrolled_net(xp, kind, static, expose, steps, streams):
    cont = cont_pattern(steps, streams)
    if expose:  # continue from the given states at the first step of some streams
        cont[0, ::2] = 1
    compare(xp, kind, steps, streams, [cont], static=static, expose=expose)


@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
@pytest.mark.parametrize("static", [False, True], ids=["plain", "static"])
def test_state_and_param_diffs_carry_over_three_calls(xp, kind, static):
    """Without expose_hidden h_T, c_T become the next call's h_0, c_0; cont 1 at t = 1 keeps them."""
    steps, streams = 3, 2
    conts = [cont_pattern(steps, streams), np.ones((steps, streams)), [[1, 0], [0, 1], [1, 1]]]
    compare(xp, kind, steps, streams, conts, static=static)


@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
def test_exposed_states_do_not_carry_over(xp, kind):
    compare(xp, kind, 2, 2, [np.ones((2, 2)), np.ones((2, 2))], expose=True)


@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
def test_fractional_cont(xp, kind):
    """cont is a scale, not a flag: h_{t-1} * cont_t, and LSTMUnit's forget gate times cont_t."""
    cont = [[0.0, 0.5], [0.25, 1.0], [1.0, 0.0], [0.75, 2.0]]
    compare(xp, kind, 4, 2, [cont, cont], static=True)


@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
def test_float32(xp, kind):
    compare(xp, kind, 4, 3, [cont_pattern(4, 3), np.ones((4, 3))], static=True, dtype=np.float32)


@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
def test_x_diffs_are_written_even_when_not_asked_for(xp, kind):
    """Caffe's Backward_cpu runs the whole unrolled net: x's and x_static's diffs (shared with it,
    the layers reading them having propagate_down true) are overwritten whatever propagate_down says."""
    compare(xp, kind, 3, 2, [cont_pattern(3, 2)], static=True, propagate=False)


@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
def test_param_diffs_accumulate_even_for_frozen_params(xp, kind):
    """The unrolled net's InnerProducts always learn: Caffe's outer net turning param_propagate_down
    off (lr_mult: 0) does not reach them, so the diffs still accumulate (the update stays 0)."""
    layer, unrolled = compare(xp, kind, 2, 2, [cont_pattern(2, 2)])
    before = [host(b.diff).copy() for b in layer.blobs]
    layer.param_propagate_down = [False] * len(layer.blobs)
    bottom_shapes = [(2, 2, 2, 2), (2, 2)]
    x, cont = (Blob(shape, np.float64, xp) for shape in bottom_shapes)
    x.data[...] = unrolled.blob("x").data
    cont.data[...] = unrolled.blob("cont").data
    top = blobs(1, xp)
    layer.reshape([x, cont], top)
    layer.forward([x, cont], top)
    top[0].diff[...] = 1.0
    layer.backward(top, [False, False], [x, cont])
    for blob, old in zip(layer.blobs, before):
        assert np.abs(host(blob.diff) - old).sum() > 0


def test_unrolled_net_has_caffes_layers_and_parameter_names():
    """The helper itself: Caffe's layer list for an LSTM with static input, T = 2, named 'rec'."""
    unrolled = Unrolled("LSTM", (2, 1, 3), (1, 2), dtype=np.float64)
    net = unrolled.net
    assert net.input_blob_names == ["x", "cont", "x_static", "c_0", "h_0"]
    owners = [name for name, owner in zip(net.param_display_names, net.param_owners) if owner == -1]
    assert owners == ["W_xc", "b_c", "W_xc_static", "W_hc"]
    assert net.param_display_names.count("W_hc") == 2
    named = [name for name in net.layer_names if "split" not in name]
    assert named == [
        "rec_", "rec_", "rec_cont_slice", "rec_x_transform", "rec_W_xc_x_static",
        "rec_W_xc_x_static_reshape", "rec_W_xc_x_slice",
        "rec_h_conted_0", "rec_transform_1", "rec_gate_input_1", "rec_unit_1",
        "rec_h_conted_1", "rec_transform_2", "rec_gate_input_2", "rec_unit_2",
        "rec_", "rec_h_concat", "h_pseudoloss",
    ]  # fmt: skip
    assert net.blob_by_name("W_xc_x_static").shape == (1, 1, 4 * HIDDEN)
    assert net.blob_by_name("h").shape == (2, 1, HIDDEN)
