"""LSTM and RNN: Caffe's RecurrentLayer semantics against naive references, gradients, nets, solvers."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from google.protobuf import text_format

from engine.blob import Blob, array_to_proto
from engine.errors import LayerSetupError
from engine.net import Net
from engine.solvers import create_solver
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob
from proto import caffe_pb2

FILLERS = 'weight_filler { type: "gaussian" std: 0.4 } bias_filler { type: "gaussian" std: 0.3 }'


def layer_text(kind, hidden=4, expose=False, debug=False, name="rec"):
    extra = " expose_hidden: true" if expose else ""
    extra += " debug_info: true" if debug else ""
    return f'name: "{name}" type: "{kind}" recurrent_param {{ num_output: {hidden} {FILLERS}{extra} }}'


def sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def naive_lstm(params, x, cont, x_static=None, h0=None, c0=None):
    """Stream by stream and step by step; params in Caffe's order (W_xc, b_c, [W_xc_static], W_hc)."""
    w_xc, b_c, *rest = params
    w_static, w_hc = rest if x_static is not None else (None, rest[0])
    steps, streams = cont.shape
    hidden = w_hc.shape[1]
    h = np.zeros((streams, hidden)) if h0 is None else h0.reshape(streams, hidden).copy()
    c = np.zeros((streams, hidden)) if c0 is None else c0.reshape(streams, hidden).copy()
    out = np.zeros((steps, streams, hidden))
    for t in range(steps):
        for n in range(streams):
            pre = w_xc @ x[t, n].ravel() + b_c + w_hc @ (cont[t, n] * h[n])
            if x_static is not None:
                pre = pre + w_static @ x_static[n].ravel()
            i, f, o = sig(pre[:hidden]), sig(pre[hidden : 2 * hidden]), sig(pre[2 * hidden : 3 * hidden])
            g = np.tanh(pre[3 * hidden :])
            c[n] = cont[t, n] * f * c[n] + i * g
            h[n] = o * np.tanh(c[n])
            out[t, n] = h[n]
    return out, h, c


def naive_rnn(params, x, cont, x_static=None, h0=None):
    """Params in Caffe's order (W_xh, b_h, [W_xh_static], W_hh, W_ho, b_o)."""
    w_xh, b_h, *rest = params
    w_static, w_hh, w_ho, b_o = rest if x_static is not None else (None, *rest)
    steps, streams = cont.shape
    hidden = w_hh.shape[0]
    h = np.zeros((streams, hidden)) if h0 is None else h0.reshape(streams, hidden).copy()
    out = np.zeros((steps, streams, hidden))
    for t in range(steps):
        for n in range(streams):
            pre = w_xh @ x[t, n].ravel() + b_h + w_hh @ (cont[t, n] * h[n])
            if x_static is not None:
                pre = pre + w_static @ x_static[n].ravel()
            h[n] = np.tanh(pre)
            out[t, n] = np.tanh(w_ho @ h[n] + b_o)
    return out, h


def sequence(xp, steps, streams, feature_shape=(3,), seed=3, cont=None):
    x = random_blob((steps, streams, *feature_shape), xp, seed=seed)
    flags = Blob((steps, streams), np.float64, xp)
    if cont is None:  # every stream starts at t = 0; stream 1 starts again in the middle
        cont = np.ones((steps, streams))
        cont[0] = 0
        if steps > 2 and streams > 1:
            cont[steps // 2, 1] = 0
    flags.data[...] = xp.asarray(np.asarray(cont, np.float64))
    return x, flags


def params_of(layer):
    return [host(b.data).astype(np.float64) for b in layer.blobs]


# --- parameters ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind, static, shapes",
    [
        ("LSTM", False, [(20, 6), (20,), (20, 5)]),
        ("LSTM", True, [(20, 6), (20,), (20, 8), (20, 5)]),
        ("RNN", False, [(5, 6), (5,), (5, 5), (5, 5), (5,)]),
        ("RNN", True, [(5, 6), (5,), (5, 8), (5, 5), (5, 5), (5,)]),
    ],
)
def test_parameter_blobs_have_caffes_order_and_shapes(kind, static, shapes):
    fillers = 'weight_filler { type: "constant" value: 0.5 } bias_filler { type: "constant" value: -2 }'
    layer = make_layer(f'name: "r" type: "{kind}" recurrent_param {{ num_output: 5 {fillers} }}')
    x, cont = sequence(np, 3, 2, feature_shape=(2, 3))
    bottom = [x, cont] + ([random_blob((2, 2, 4))] if static else [])
    layer.setup(bottom, blobs(1))
    assert [b.shape for b in layer.blobs] == shapes
    assert layer.param_propagate_down == [True] * len(shapes)
    for blob, shape in zip(layer.blobs, shapes):  # 1-axis blobs are biases, from the bias filler
        assert (host(blob.data) == (-2 if len(shape) == 1 else 0.5)).all()


def test_default_fillers_are_constant_zero():
    layer = make_layer('name: "l" type: "LSTM" recurrent_param { num_output: 2 }')
    x, cont = sequence(np, 2, 1)
    layer.setup([x, cont], blobs(1))
    assert all(not host(b.data).any() for b in layer.blobs)


# --- forward ------------------------------------------------------------------------------------
@pytest.mark.parametrize("steps, streams", [(1, 3), (4, 2), (6, 3)])
@pytest.mark.parametrize("static", [False, True])
def test_lstm_forward_matches_the_equations(xp, steps, streams, static):
    layer, top = make_layer(layer_text("LSTM"), xp), blobs(1, xp)
    x, cont = sequence(xp, steps, streams, feature_shape=(3, 1))
    bottom = [x, cont] + ([random_blob((streams, 2, 2), xp, seed=9)] if static else [])
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    assert top[0].shape == (steps, streams, 4)
    want, _, _ = naive_lstm(params_of(layer), *(host(b.data) for b in bottom))
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("steps, streams", [(1, 3), (4, 2), (6, 3)])
@pytest.mark.parametrize("static", [False, True])
def test_rnn_forward_matches_the_equations(xp, steps, streams, static):
    layer, top = make_layer(layer_text("RNN"), xp), blobs(1, xp)
    x, cont = sequence(xp, steps, streams)
    bottom = [x, cont] + ([random_blob((streams, 3), xp, seed=9)] if static else [])
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    want, _ = naive_rnn(params_of(layer), *(host(b.data) for b in bottom))
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("static", [False, True])
def test_lstm_expose_hidden_takes_and_gives_the_states(xp, static):
    steps, streams = 4, 3
    layer, top = make_layer(layer_text("LSTM", expose=True), xp), blobs(3, xp)
    x, cont = sequence(xp, steps, streams, cont=np.ones((steps, streams)))  # continues from h_0, c_0
    h0, c0 = random_blob((1, streams, 4), xp, seed=11), random_blob((1, streams, 4), xp, seed=12)
    statics = [random_blob((streams, 2), xp, seed=9)] if static else []
    bottom = [x, cont, *statics, h0, c0]
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    arrays = [host(b.data) for b in bottom]
    x_static = arrays[2] if static else None
    want, h_t, c_t = naive_lstm(params_of(layer), *arrays[:2], x_static, h0=arrays[-2], c0=arrays[-1])
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-10, atol=1e-12)
    assert top[1].shape == top[2].shape == (1, streams, 4)
    np.testing.assert_allclose(host(top[1].data)[0], h_t, rtol=1e-10)
    np.testing.assert_allclose(host(top[2].data)[0], c_t, rtol=1e-10)
    layer.forward(bottom, top)  # nothing carried over: the bottoms are the initial state every time
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-10, atol=1e-12)


def test_rnn_expose_hidden_takes_and_gives_the_state(xp):
    layer, top = make_layer(layer_text("RNN", expose=True), xp), blobs(2, xp)
    x, cont = sequence(xp, 3, 2, cont=[[1, 0], [1, 1], [0, 1]])
    h0 = random_blob((1, 2, 4), xp, seed=11)
    layer.setup([x, cont, h0], top)
    layer.forward([x, cont, h0], top)
    want, h_t = naive_rnn(params_of(layer), host(x.data), host(cont.data), h0=host(h0.data))
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(host(top[1].data)[0], h_t, rtol=1e-10)


@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
def test_state_carries_from_one_forward_to_the_next(xp, kind):
    """Caffe's TestForward: a sequence in one batch equals it fed one timestep per forward pass."""
    steps, streams = 4, 3
    whole, top = make_layer(layer_text(kind), xp), blobs(1, xp)
    x, cont = sequence(xp, steps, streams)
    whole.setup([x, cont], top)
    whole.forward([x, cont], top)
    full = host(top[0].data).copy()

    stepwise, step_top = make_layer(layer_text(kind), xp), blobs(1, xp)
    x1, cont1 = sequence(xp, 1, streams)
    stepwise.setup([x1, cont1], step_top)
    for blob, source in zip(stepwise.blobs, whole.blobs):
        blob.data[...] = source.data
    for t in range(steps):
        x1.data[...] = x.data[t : t + 1]
        cont1.data[...] = cont.data[t : t + 1]
        stepwise.forward([x1, cont1], step_top)
        np.testing.assert_allclose(host(step_top[0].data)[0], full[t], rtol=1e-10, atol=1e-12)

    stepwise.reset()  # Reset: back to zeros, so cont 1 at the first step changes nothing
    x1.data[...] = x.data[:1]
    cont1.data[...] = 1
    stepwise.forward([x1, cont1], step_top)
    np.testing.assert_allclose(host(step_top[0].data)[0], full[0], rtol=1e-10, atol=1e-12)
    cont1.data[...] = 0  # with cont 0 at every step, later steps differ from the whole sequence
    for t in range(1, steps):
        x1.data[...] = x.data[t : t + 1]
        stepwise.forward([x1, cont1], step_top)
        assert not np.allclose(host(step_top[0].data)[0], full[t])


def test_a_change_of_batch_size_keeps_the_state_as_caffes_blobs_do(xp):
    layer, top = make_layer(layer_text("LSTM"), xp), blobs(1, xp)
    x, cont = sequence(xp, 2, 3, cont=np.ones((2, 3)))
    layer.setup([x, cont], top)
    layer.forward([x, cont], top)
    params = params_of(layer)
    _, h_prev, c_prev = naive_lstm(params, host(x.data), host(cont.data))

    x2, cont2 = sequence(xp, 2, 2, seed=8, cont=np.ones((2, 2)))  # fewer streams: the first ones keep theirs
    layer.reshape([x2, cont2], top)
    layer.forward([x2, cont2], top)
    want, _, _ = naive_lstm(params, host(x2.data), host(cont2.data), h0=h_prev[:2], c0=c_prev[:2])
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-10, atol=1e-12)

    x4, cont4 = sequence(xp, 2, 4, seed=9, cont=np.ones((2, 4)))  # more streams than ever: zeros
    layer.reshape([x4, cont4], top)
    layer.forward([x4, cont4], top)
    want, _, _ = naive_lstm(params, host(x4.data), host(cont4.data))
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-10, atol=1e-12)
    assert top[0].shape == (2, 4, 4)


# --- backward -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
@pytest.mark.parametrize("static", [False, True])
def test_gradients(xp, kind, static):
    """Caffe's TestGradient*: T=3, N=2, D=3, H=4, cont 0 at each stream's start and mid-sequence."""
    layer = make_layer(layer_text(kind), xp)
    x, cont = sequence(xp, 3, 2, cont=[[0, 0], [1, 0], [1, 1]])
    bottom = [x, cont] + ([random_blob((2, 2), xp, seed=4)] if static else [])
    GradientChecker().check(layer, bottom, blobs(1, xp), check_bottom=[0, 2] if static else [0])


@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
def test_exposed_states_pass_no_gradient_as_in_caffe(xp, kind):
    """Caffe shares only the data of h_0/c_0 and h_T/c_T with its unrolled net: their diffs stay out."""
    states = 2 if kind == "LSTM" else 1
    layer, top = make_layer(layer_text(kind, expose=True), xp), blobs(1 + states, xp)
    x, cont = sequence(xp, 3, 2, cont=np.ones((3, 2)))
    initial = [random_blob((1, 2, 4), xp, seed=20 + k) for k in range(states)]
    bottom = [x, cont, *initial]
    layer.setup(bottom, top)

    def objective():  # 1/2 |output|^2 only: the exposed tops carry no gradient back
        layer.forward(bottom, top)
        return 0.5 * float((host(top[0].data) ** 2).sum())

    objective()
    top[0].diff[...] = top[0].data
    for blob in top[1:]:
        blob.diff[...] = 5.0
    for blob in initial:
        blob.diff[...] = -3.0
    layer.backward(top, [True, False] + [True] * states, bottom)
    analytic = host(x.diff).copy()
    assert all((host(b.diff) == -3.0).all() for b in initial)
    values, step = x.data.reshape(-1), 1e-2
    for i in range(values.size):
        keep = float(values[i])
        values[i] = keep + step
        plus = objective()
        values[i] = keep - step
        minus = objective()
        values[i] = keep
        numeric = (plus - minus) / (2 * step)
        assert abs(analytic.reshape(-1)[i] - numeric) <= 1e-3 * max(abs(numeric), 1.0)


@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
def test_diffs_ignore_propagate_down_as_caffes_unrolled_net_does(xp, kind):
    """Caffe's Backward runs its whole unrolled net: x's diff (shared with it) is written and every
    parameter diff accumulates, whatever propagate_down and param_propagate_down (lr_mult 0) say."""
    layer, top = make_layer(layer_text(kind), xp), blobs(1, xp)
    x, cont = sequence(xp, 3, 2)
    layer.setup([x, cont], top)
    layer.forward([x, cont], top)
    top[0].diff[...] = 1
    layer.backward(top, [True, False], [x, cont])
    once = [host(b.diff).copy() for b in layer.blobs]
    dx = host(x.diff).copy()
    assert all(np.abs(d).sum() > 0 for d in once) and np.abs(dx).sum() > 0
    x.diff[...] = 0
    layer.param_propagate_down = [False] * len(layer.blobs)
    layer.backward(top, [False, False], [x, cont])
    np.testing.assert_allclose(host(x.diff), dx, rtol=1e-12)
    for blob, first in zip(layer.blobs, once):
        np.testing.assert_allclose(host(blob.diff), 2 * first, rtol=1e-12)


def test_reset_zeroes_the_current_streams_only_as_caffe_does():
    """Caffe's Reset zeroes count() values of h_T and c_T; a blob keeps its memory as N shrinks,
    so a stream beyond the reset ones keeps its state when N grows back within the capacity."""
    layer, top = make_layer(layer_text("LSTM")), blobs(1)
    x3, cont3 = sequence(np, 2, 3, cont=np.ones((2, 3)))
    layer.setup([x3, cont3], top)
    layer.forward([x3, cont3], top)
    params = params_of(layer)
    _, h_prev, c_prev = naive_lstm(params, x3.data, cont3.data)
    x2, cont2 = sequence(np, 2, 2, seed=5, cont=np.zeros((2, 2)))
    layer.reshape([x2, cont2], top)
    layer.reset()
    layer.reshape([x3, cont3], top)
    layer.forward([x3, cont3], top)
    h0, c0 = np.zeros_like(h_prev), np.zeros_like(c_prev)
    h0[2], c0[2] = h_prev[2], c_prev[2]
    want, _, _ = naive_lstm(params, x3.data, cont3.data, h0=h0, c0=c0)
    np.testing.assert_allclose(top[0].data, want, rtol=1e-10, atol=1e-12)


def test_no_gradient_for_cont():
    layer, top = make_layer(layer_text("LSTM")), blobs(1)
    x, cont = sequence(np, 2, 2)
    layer.setup([x, cont], top)
    assert layer.allow_force_backward(0) and not layer.allow_force_backward(1)
    assert layer.allow_force_backward(2)
    layer.forward([x, cont], top)
    top[0].diff[...] = 1
    cont.diff[...] = 9  # Caffe's RecurrentLayer does not refuse: it leaves cont's diff alone
    layer.backward(top, [True, True], [x, cont])
    assert (host(cont.diff) == 9).all() and np.abs(host(x.diff)).sum() > 0


# --- bad input ----------------------------------------------------------------------------------
def bottoms_of(*shapes):
    return [random_blob(s) for s in shapes]


@pytest.mark.parametrize(
    "text, shapes, tops, message",
    [
        (layer_text("LSTM"), [(3, 2, 4), (3, 3)], 1, "cont"),
        (layer_text("LSTM"), [(3, 2, 4), (2, 2)], 1, "cont"),
        (layer_text("LSTM"), [(3, 2, 4), (3, 2, 1)], 1, "cont"),
        (layer_text("RNN"), [(3,), (3, 1)], 1, "at least 2 axes"),
        (layer_text("LSTM"), [(3, 2, 4), (3, 2), (3, 5)], 1, "static input"),
        (layer_text("LSTM", hidden=0), [(3, 2, 4), (3, 2)], 1, "num_output must be positive"),
        (layer_text("LSTM"), [(3, 2, 4)], 1, "2 or 3 bottom blobs, got 1"),
        (layer_text("LSTM"), [(3, 2, 4), (3, 2)], 2, "exactly 1 top"),
        (layer_text("LSTM", expose=True), [(3, 2, 4), (3, 2), (1, 2, 4)], 3, "4 or 5 bottom"),
        (layer_text("LSTM", expose=True), [(3, 2, 4), (3, 2), (1, 2, 4), (1, 2, 4)], 1, "exactly 3 top"),
        (layer_text("LSTM", expose=True), [(3, 2, 4), (3, 2), (1, 2, 4), (1, 2, 3)], 3, "c_0"),
        (layer_text("LSTM", expose=True), [(3, 2, 4), (3, 2), (2, 4), (1, 2, 4)], 3, "h_0"),
        (layer_text("RNN", expose=True), [(3, 2, 4), (3, 2), (2, 5), (1, 3, 4)], 2, "h_0"),
    ],
)
def test_bad_shapes_are_refused(text, shapes, tops, message):
    with pytest.raises(LayerSetupError, match=message):
        make_layer(text).setup(bottoms_of(*shapes), blobs(tops))


def test_reshape_refuses_a_new_number_of_timesteps_or_features():
    layer, top = make_layer(layer_text("RNN")), blobs(1)
    layer.setup(bottoms_of((3, 2, 4), (3, 2)), top)
    layer.reshape(bottoms_of((3, 5, 4), (3, 5)), top)  # N may change
    assert top[0].shape == (3, 5, 4)
    with pytest.raises(LayerSetupError, match="timesteps changed"):
        layer.reshape(bottoms_of((4, 2, 4), (4, 2)), top)
    with pytest.raises(LayerSetupError, match="features"):
        layer.reshape(bottoms_of((3, 2, 5), (3, 2)), top)
    with pytest.raises(LayerSetupError, match="cont"):
        layer.reshape(bottoms_of((3, 2, 4), (3, 4)), top)


def test_loaded_blobs_are_checked():
    param = text_format.Parse(layer_text("LSTM"), caffe_pb2.LayerParameter())
    for shape in [(16, 4), (16,), (16, 5)]:
        param.blobs.append(array_to_proto(np.zeros(shape)))
    with pytest.raises(LayerSetupError, match="W_hc"):
        from engine.layers import create_layer

        create_layer(param, dtype=np.float64).setup(bottoms_of((3, 2, 4), (3, 2)), blobs(1))


# --- in a net -----------------------------------------------------------------------------------
NET = """
name: "sequence_regression"
force_backward: true
layer { name: "data" type: "Input" top: "x" top: "cont" top: "target"
        input_param { shape { dim: 5 dim: 2 dim: 3 } shape { dim: 5 dim: 2 }
                      shape { dim: 5 dim: 2 dim: 4 } } }
layer { name: "lstm" type: "LSTM" bottom: "x" bottom: "cont" top: "h"
        recurrent_param { num_output: 4 weight_filler { type: "uniform" min: -0.3 max: 0.3 }
                          bias_filler { type: "constant" value: 0 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "h" bottom: "target" top: "loss" }
"""


def fill_inputs(net, xp):
    rng = np.random.default_rng(5)
    cont = np.ones((5, 2))
    cont[0] = 0
    cont[3, 1] = 0
    net.blob_by_name("x").data[...] = xp.asarray(rng.normal(size=(5, 2, 3)))
    net.blob_by_name("cont").data[...] = xp.asarray(cont)
    net.blob_by_name("target").data[...] = xp.asarray(rng.uniform(-0.5, 0.5, size=(5, 2, 4)))


def test_a_net_with_an_lstm_runs_forward_and_backward(xp):
    net = Net(text_format.Parse(NET, caffe_pb2.NetParameter()), dtype=np.float64, xp=xp)
    fill_inputs(net, xp)
    lstm = net.layer_by_name("lstm")
    assert [p.shape for p in net.learnable_params] == [(16, 3), (16,), (16, 4)]
    assert all(p is b for p, b in zip(net.learnable_params, lstm.blobs))
    lstm_id = net.layer_names.index("lstm")
    assert net.bottom_need_backward[lstm_id] == [True, False]  # force_backward skips cont
    loss = net.forward_backward()
    h = host(net.blob_by_name("h").data)
    target = host(net.blob_by_name("target").data)
    want, _, _ = naive_lstm(
        params_of(lstm), host(net.blob_by_name("x").data), host(net.blob_by_name("cont").data)
    )
    np.testing.assert_allclose(h, want, rtol=1e-10, atol=1e-12)
    assert loss == pytest.approx(((h - target) ** 2).sum() / (2 * 5))  # EuclideanLoss: over axis 0 (T)
    assert np.abs(host(net.blob_by_name("x").diff)).sum() > 0
    assert all(np.abs(host(p.diff)).sum() > 0 for p in net.learnable_params)


def test_caffemodel_blobs_load_by_position():
    net = Net(text_format.Parse(NET, caffe_pb2.NetParameter()), dtype=np.float64, xp=np)
    fill_inputs(net, np)
    rng = np.random.default_rng(2)
    arrays = [rng.normal(size=s) * 0.3 for s in [(16, 3), (16,), (16, 4)]]
    weights = caffe_pb2.NetParameter()
    layer = weights.layer.add(name="lstm", type="LSTM")
    layer.blobs.extend(array_to_proto(a) for a in arrays)
    net.copy_trained_layers_from(weights)
    net.forward()
    want, _, _ = naive_lstm(arrays, host(net.blob_by_name("x").data), host(net.blob_by_name("cont").data))
    np.testing.assert_allclose(host(net.blob_by_name("h").data), want, rtol=1e-6, atol=1e-7)
    layer.blobs[3 - 1].shape.dim[1] = 5
    with pytest.raises(Exception, match="shape mismatch"):
        net.copy_trained_layers_from(weights)


def test_sgd_training_lowers_the_loss(xp):
    solver_param = text_format.Parse(
        'type: "SGD" base_lr: 0.5 momentum: 0.9 lr_policy: "fixed" max_iter: 40 random_seed: 3',
        caffe_pb2.SolverParameter(),
    )
    solver_param.net_param.CopyFrom(text_format.Parse(NET, caffe_pb2.NetParameter()))
    solver = create_solver(solver_param, xp=xp, log_fn=lambda line: None)
    fill_inputs(solver.net, xp)
    first = solver.net.forward()[1]
    solver.step(40)
    last = solver.net.forward()[1]
    assert last < 0.5 * first


def test_debug_info_logs_the_output_and_the_gradients(caplog):
    layer, top = make_layer(layer_text("RNN", debug=True)), blobs(1)
    x, cont = sequence(np, 2, 2)
    layer.setup([x, cont], top)
    with caplog.at_level(logging.INFO, logger="engine.net"):
        layer.forward([x, cont], top)
        top[0].diff[...] = 1
        layer.backward(top, [True, False], [x, cont])
    text = caplog.text
    mean = float(np.abs(host(top[0].data)).mean())
    assert f"[Forward] Layer rec_o_concat, top blob o data: {mean:g}" in text
    assert "[Backward] Layer rec_x_transform, bottom blob x diff" in text
    assert "param blob W_hh diff" in text


def test_float32_matches_the_float64_equations(xp):
    layer, top = make_layer(layer_text("LSTM"), xp, dtype=np.float32), blobs(1, xp, np.float32)
    x, cont = sequence(xp, 5, 3)
    x32 = Blob(x.shape, np.float32, xp)
    x32.data[...] = x.data
    c32 = Blob(cont.shape, np.float32, xp)
    c32.data[...] = cont.data
    layer.setup([x32, c32], top)
    layer.forward([x32, c32], top)
    assert top[0].data.dtype == np.float32
    want, _, _ = naive_lstm(params_of(layer), host(x32.data).astype(np.float64), host(cont.data))
    np.testing.assert_allclose(host(top[0].data), want, rtol=1e-5, atol=1e-6)


SHARED = """
layer { name: "data" type: "Input" top: "x" top: "cont" top: "target"
        input_param { shape { dim: 5 dim: 2 dim: 3 } shape { dim: 5 dim: 2 }
                      shape { dim: 5 dim: 2 dim: 4 } } }
layer { name: "enc" type: "LSTM" bottom: "x" bottom: "cont" top: "h1"
        param { name: "w" } param { name: "b" } param { name: "u" }
        recurrent_param { num_output: 4 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "dec" type: "LSTM" bottom: "x" bottom: "cont" top: "h2"
        param { name: "w" } param { name: "b" } param { name: "u" }
        recurrent_param { num_output: 4 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "sum" type: "Eltwise" bottom: "h1" bottom: "h2" top: "h" }
layer { name: "loss" type: "EuclideanLoss" bottom: "h" bottom: "target" top: "loss" }
"""


def test_two_lstms_share_their_parameters_by_name(xp):
    net = Net(text_format.Parse(SHARED, caffe_pb2.NetParameter()), dtype=np.float64, xp=xp)
    fill_inputs(net, xp)
    enc = net.layer_by_name("enc")
    assert len(net.learnable_params) == 3
    net.forward_backward()
    # dec was filled with other random weights: equal outputs mean it runs on enc's
    np.testing.assert_allclose(host(net.blob_by_name("h1").data), host(net.blob_by_name("h2").data))

    # L = |2f - y|^2 / 2T through both layers; alone, L' = |f - y/2|^2 / 2T: dL = 4 dL' per parameter,
    # twice from the doubled error and twice from the two layers adding into one shared diff.
    alone = Net(text_format.Parse(NET, caffe_pb2.NetParameter()), dtype=np.float64, xp=xp)
    fill_inputs(alone, xp)
    alone.blob_by_name("target").data[...] = net.blob_by_name("target").data / 2
    for mine, theirs in zip(alone.layer_by_name("lstm").blobs, enc.blobs):
        mine.data[...] = theirs.data
    alone.clear_param_diffs()
    alone.forward_backward()
    for shared, single in zip(enc.blobs, alone.layer_by_name("lstm").blobs):
        assert np.abs(host(single.diff)).sum() > 0
        np.testing.assert_allclose(host(shared.diff), 4 * host(single.diff), rtol=1e-9, atol=1e-12)
