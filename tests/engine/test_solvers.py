"""Solvers: Caffe's goldens, closed-form least-squares updates for every rule, policies, snapshots."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from google.protobuf import text_format
from tests_support import close

from engine import backend
from engine.errors import EngineError
from engine.solvers import create_solver, solver_types
from engine.solvers.lr_policy import learning_rate
from proto import caffe_pb2

N, D = 8, 3
LEAST_SQUARES = f"""
name: "least_squares"
layer {{ name: "input" type: "Input" top: "data" top: "targets"
        input_param {{ shape {{ dim: {N} dim: {D} }} shape {{ dim: {N} dim: 1 }} }} }}
layer {{ name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param {{ num_output: 1 weight_filler {{ type: "gaussian" std: 1 }}
                               bias_filler {{ type: "gaussian" std: 1 }} }} }}
layer {{ name: "loss" type: "EuclideanLoss" bottom: "ip" bottom: "targets" top: "loss" }}
"""


def solver_for(type_name: str, extra: str = "", xp=np):
    param = text_format.Parse(
        f'type: "{type_name}" base_lr: 0.1 lr_policy: "fixed" max_iter: 10 random_seed: 7',
        caffe_pb2.SolverParameter(),
    )
    text_format.Merge(extra, param)  # later fields win, as a user's settings over these defaults
    param.net_param.CopyFrom(text_format.Parse(LEAST_SQUARES, caffe_pb2.NetParameter()))
    solver = create_solver(param, xp=xp, log_fn=lambda line: None)
    rng = np.random.default_rng(11)
    solver.net.blob_by_name("data").data[...] = xp.asarray(rng.normal(size=(N, D)))
    solver.net.blob_by_name("targets").data[...] = xp.asarray(rng.normal(size=(N, 1)))
    return solver


def gradients(solver) -> tuple[np.ndarray, np.ndarray]:
    """dL/dW and dL/db of L = 1/(2N) |X W^T + b - y|^2, in float64."""
    net = solver.net
    x = backend.to_host(net.blob_by_name("data").data).astype(np.float64)
    y = backend.to_host(net.blob_by_name("targets").data).astype(np.float64)
    w = backend.to_host(net.params[0].data).astype(np.float64)
    b = backend.to_host(net.params[1].data).astype(np.float64)
    residual = x @ w.T + b - y
    return residual.T @ x / N, residual.sum(0) / N


def reference_step(kind, p, grads, params, history, t, rate, decay_mult=(1.0, 1.0), lr_mult=(1.0, 1.0)):
    """One update of each parameter by the textbook rule, with Caffe's regularisation order."""
    out = []
    for i, (g, w) in enumerate(zip(grads, params)):
        g = g + p.weight_decay * decay_mult[i] * (w if p.regularization_type == "L2" else np.sign(w))
        lr = rate * lr_mult[i]
        h = history[i]
        if kind == "SGD":
            h[0] = p.momentum * h[0] + lr * g
            step = h[0]
        elif kind == "Nesterov":
            prev = h[0].copy()
            h[0] = p.momentum * h[0] + lr * g
            step = (1 + p.momentum) * h[0] - p.momentum * prev
        elif kind == "AdaGrad":
            h[0] = h[0] + g * g
            step = lr * g / (np.sqrt(h[0]) + p.delta)
        elif kind == "RMSProp":
            h[0] = p.rms_decay * h[0] + (1 - p.rms_decay) * g * g
            step = lr * g / (np.sqrt(h[0]) + p.delta)
        elif kind == "AdaDelta":
            h[0] = p.momentum * h[0] + (1 - p.momentum) * g * g
            u = g * np.sqrt((h[1] + p.delta) / (h[0] + p.delta))
            h[1] = p.momentum * h[1] + (1 - p.momentum) * u * u
            step = lr * u
        elif kind == "Adam":
            h[0] = p.momentum * h[0] + (1 - p.momentum) * g
            h[1] = p.momentum2 * h[1] + (1 - p.momentum2) * g * g
            correction = math.sqrt(1 - p.momentum2**t) / (1 - p.momentum**t)
            step = lr * correction * h[0] / (np.sqrt(h[1]) + p.delta)
        out.append(w - step)
    return out


EXTRA = {
    "SGD": "momentum: 0.9 weight_decay: 0.01",
    "Nesterov": "momentum: 0.9 weight_decay: 0.01",
    "AdaGrad": "weight_decay: 0.01 delta: 1e-6",
    "RMSProp": "rms_decay: 0.95 weight_decay: 0.01 delta: 1e-6",
    "AdaDelta": "momentum: 0.95 delta: 1e-6 base_lr: 1.0",
    "Adam": "momentum: 0.9 momentum2: 0.999 delta: 1e-8 base_lr: 0.01 weight_decay: 0.01",
}


def test_every_caffe_solver_is_registered():
    assert solver_types() == sorted(EXTRA)


@pytest.mark.parametrize("kind", sorted(EXTRA))
@pytest.mark.parametrize("regularization", ["L2", "L1"])
def test_least_squares_update_matches_closed_form(xp, kind, regularization):
    solver = solver_for(kind, EXTRA[kind] + f' regularization_type: "{regularization}"', xp=xp)
    p = solver.param
    params = [backend.to_host(b.data).astype(np.float64) for b in solver.net.params]
    history = [[np.zeros_like(w), np.zeros_like(w)] for w in params]
    for t in range(1, 4):
        grads = gradients(solver)
        expected = reference_step(kind, p, grads, params, history, t, p.base_lr)
        solver.step(1)
        got = [backend.to_host(b.data) for b in solver.net.params]
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-6)
        params = [g.astype(np.float64) for g in got]


def test_lr_mult_and_decay_mult_apply_per_param():
    solver = solver_for("SGD", "weight_decay: 0.1")
    solver.net.params_lr[:] = [2.0, 0.5]
    solver.net.params_weight_decay[:] = [3.0, 1.0]
    params = [b.data.astype(np.float64) for b in solver.net.params]
    grads = gradients(solver)
    expected = reference_step(
        "SGD",
        solver.param,
        grads,
        params,
        [[np.zeros_like(w)] for w in params],
        1,
        0.1,
        decay_mult=(3.0, 1.0),
        lr_mult=(2.0, 0.5),
    )
    solver.step(1)
    for blob, e in zip(solver.net.params, expected):
        np.testing.assert_allclose(blob.data, e, rtol=1e-5)


def test_iter_size_accumulates_and_normalizes():
    plain, accumulated = solver_for("SGD", "momentum: 0.9"), solver_for("SGD", "momentum: 0.9 iter_size: 3")
    plain.step(2)
    accumulated.step(2)
    for a, b in zip(plain.net.params, accumulated.net.params):
        np.testing.assert_allclose(a.data, b.data, rtol=1e-5)


def test_gradient_clipping_scales_to_the_global_norm():
    solver = solver_for("SGD", "clip_gradients: 0.01")
    grads = gradients(solver)
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    assert norm > 0.01
    before = [b.data.astype(np.float64) for b in solver.net.params]
    solver.step(1)
    for b, w, g in zip(solver.net.params, before, grads):
        np.testing.assert_allclose(b.data, w - 0.1 * g * 0.01 / norm, rtol=1e-5)


POLICY_CASES = [
    ("fixed", "", lambda it: 0.1),
    ("step", "gamma: 0.5 stepsize: 3", lambda it: 0.1 * 0.5 ** (it // 3)),
    ("exp", "gamma: 0.9", lambda it: 0.1 * 0.9**it),
    ("inv", "gamma: 0.0001 power: 0.75", lambda it: 0.1 * (1 + 0.0001 * it) ** -0.75),
    ("multistep", "gamma: 0.1 stepvalue: 2 stepvalue: 5", lambda it: 0.1 * 0.1 ** ((it >= 2) + (it >= 5))),
    ("poly", "power: 2 max_iter: 10", lambda it: 0.1 * (1 - it / 10) ** 2),
    ("sigmoid", "gamma: -0.5 stepsize: 4", lambda it: 0.1 / (1 + math.exp(0.5 * (it - 4)))),
]


@pytest.mark.parametrize(("policy", "fields", "formula"), POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_learning_rate_policies(policy, fields, formula):
    param = text_format.Parse(f'base_lr: 0.1 lr_policy: "{policy}" {fields}', caffe_pb2.SolverParameter())
    step = 0
    for it in range(9):
        rate, step = learning_rate(param, it, step)
        assert rate == pytest.approx(formula(it), rel=1e-6), f"{policy} at iteration {it}"  # float32 fields


def test_sigmoid_policy_saturates_instead_of_overflowing():
    param = text_format.Parse(
        'base_lr: 0.1 lr_policy: "sigmoid" gamma: 0.5 stepsize: 4000', caffe_pb2.SolverParameter()
    )
    assert learning_rate(param, 0)[0] == 0.0
    assert learning_rate(param, 8000)[0] == pytest.approx(0.1)


def test_unknown_policy_and_missing_net_are_clear_errors():
    param = text_format.Parse('base_lr: 0.1 lr_policy: "cosine"', caffe_pb2.SolverParameter())
    with pytest.raises(EngineError, match="Unknown learning rate policy: 'cosine'"):
        learning_rate(param, 0)
    with pytest.raises(EngineError, match="must specify a train net"):
        create_solver(caffe_pb2.SolverParameter(type="SGD"))
    with pytest.raises(Exception, match="Unknown solver type: 'Bogus'"):
        create_solver(caffe_pb2.SolverParameter(type="Bogus"))


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_snapshot_and_restore_continue_the_same_trajectory(tmp_path, kind):
    prefix = str(tmp_path / "ls")
    straight = solver_for(kind, EXTRA[kind] + ' lr_policy: "step" gamma: 0.5 stepsize: 2')
    straight.step(5)
    first = solver_for(
        kind, EXTRA[kind] + f' lr_policy: "step" gamma: 0.5 stepsize: 2 snapshot_prefix: "{prefix}"'
    )
    first.step(3)
    model, state = first.snapshot()
    assert model.endswith("ls_iter_3.caffemodel") and state.endswith("ls_iter_3.solverstate")
    resumed = solver_for(kind, EXTRA[kind] + ' lr_policy: "step" gamma: 0.5 stepsize: 2')
    resumed.restore(state)
    assert resumed.iter == 3
    resumed.step(2)
    for a, b in zip(straight.net.params, resumed.net.params):
        np.testing.assert_allclose(a.data, b.data, rtol=1e-6)


@pytest.mark.parametrize("case", ["sgd", "adam", "nesterov"])
def test_solver_goldens_match_caffe(goldens, case, monkeypatch):
    folder = goldens / "solvers" / case
    monkeypatch.chdir(folder)  # Caffe resolves net: against the working directory
    param = text_format.Parse((folder / "solver.prototxt").read_text(), caffe_pb2.SolverParameter())
    solver = create_solver(param, xp=np, log_fn=lambda line: None)
    io = np.load(folder / "io.npz")
    solver.net.copy_trained_layers_from(
        caffe_pb2.NetParameter.FromString((folder / "init.caffemodel").read_bytes())
    )
    solver.net.blob_by_name("data").data[...] = io["data/data"]
    solver.net.blob_by_name("label").data[...] = io["data/label"]
    for k in range(1, 6):
        loss = solver.net.forward_from_to()
        assert close(np.float32(loss), io[f"step{k}/loss"], 1e-5), f"{case} step {k} loss"
        solver.step(1)
        for i in range(2):
            got = solver.net.layer_by_name("fc").blobs[i].data
            assert close(got, io[f"step{k}/param/fc/{i}"], 1e-5), f"{case} step {k} param {i}"


def test_rates_are_rounded_to_float32_with_caffes_float_terms():
    f = np.float32
    param = text_format.Parse(
        'base_lr: 0.01 lr_policy: "inv" gamma: 0.0001 power: 0.75', caffe_pb2.SolverParameter()
    )
    # Caffe: pow(Dtype(1) + gamma * iter, -power), the base formed in float32, the rate kept as float32.
    inner = f(1) + f(param.gamma) * f(12345)
    expected = f(param.base_lr * float(inner) ** -param.power)
    assert learning_rate(param, 12345)[0] == float(expected)
    assert learning_rate(param, 12345, dtype=np.float64)[0] == pytest.approx(float(expected), rel=1e-6)
    poly = text_format.Parse(
        'base_lr: 0.1 lr_policy: "poly" power: 1 max_iter: 3', caffe_pb2.SolverParameter()
    )
    assert learning_rate(poly, 1)[0] == float(f(poly.base_lr * float(f(1) - f(1) / f(3))))
    assert learning_rate(poly, 3)[0] == 0.0


def test_multistep_advances_one_step_per_iteration_and_keeps_its_position():
    param = text_format.Parse(
        'base_lr: 1 lr_policy: "multistep" gamma: 0.5 stepvalue: 2 stepvalue: 2 stepvalue: 5',
        caffe_pb2.SolverParameter(),
    )
    steps, step = [], 0
    for it in range(7):
        _, step = learning_rate(param, it, step)
        steps.append(step)
    # Two stepvalues at 2: Caffe takes the second one an iteration later; past the last, it stays.
    assert steps == [0, 0, 1, 2, 2, 3, 3]
    # Resumed at iteration 6 with no position, the steps are taken one per call, not at once.
    assert learning_rate(param, 6, 0) == (0.5, 1)
    assert learning_rate(param, 6, 3) == (0.125, 3)


def test_step_policy_sets_current_step_and_multistep_logs_its_status():
    lines = []
    solver = solver_for("SGD", 'lr_policy: "multistep" gamma: 0.5 stepvalue: 1 display: 1')
    solver.say = lines.append
    solver.step(2)
    assert "MultiStep Status: Iteration 1, step = 1" in lines
    assert lines.index("MultiStep Status: Iteration 1, step = 1") < lines.index("Iteration 1, lr = 0.05")
    step = solver_for("SGD", 'lr_policy: "step" gamma: 0.5 stepsize: 2')
    step.step(5)
    assert step.current_step == 2  # iteration 4 // 2


def test_regularization_type_is_checked_only_when_there_is_decay():
    solver_for("SGD", 'regularization_type: "L3" weight_decay: 0').step(1)
    with pytest.raises(EngineError, match="Unknown regularization type: L3"):
        solver_for("SGD", 'regularization_type: "L3" weight_decay: 0.1').step(1)


SCALAR_TEST_NET = """
test_net_param { name: "t" layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 } } } }
test_iter: 10 test_interval: 100
"""


def test_test_scores_are_summed_and_averaged_in_float32():
    lines = []
    solver = solver_for("SGD", SCALAR_TEST_NET)
    solver.say = lines.append
    solver.test_nets[0].blob_by_name("x").data[...] = 0.1
    total = np.float32(0)
    for _ in range(10):
        total += np.float32(0.1)
    expected = float(total / np.float32(10))
    assert expected != float(np.float32(0.1))  # the float32 sum drifts: the check means something
    assert solver.test(0) == {"x": expected}
    assert f"    Test net output #0: x = {expected:g}" in lines


def test_a_stop_request_interrupts_testing_and_a_snapshot_request_is_served(tmp_path):
    lines = []
    solver = solver_for("SGD", SCALAR_TEST_NET + f' snapshot_prefix: "{tmp_path / "p"}"')
    solver.say = lines.append
    requests = iter(["snapshot", None] + [None] * 20)
    solver.action = lambda: next(requests)
    assert solver.test(0) == {"x": 0.0}
    assert (tmp_path / "p_iter_0.caffemodel").exists()
    solver.action = lambda: "stop"
    assert solver.test(0) == {}
    assert lines[-1] == "Test interrupted." and solver.requested_early_exit


def test_log_lines_name_the_net_sources_and_the_display_rate():
    lines = []
    param = text_format.Parse(
        'type: "SGD" base_lr: 0.1 lr_policy: "fixed" display: 1 test_iter: 1 test_iter: 1 test_interval: 5',
        caffe_pb2.SolverParameter(),
    )
    param.net_param.CopyFrom(text_format.Parse(LEAST_SQUARES, caffe_pb2.NetParameter()))
    param.test_net_param.add().CopyFrom(param.net_param)
    solver = create_solver(param, xp=np, log_fn=lines.append)
    assert lines[0].startswith("Initializing solver from parameters: \ntest_iter: 1\ntest_iter: 1\n")
    assert 'type: "SGD"' in lines[0]
    assert lines[1:5] == [
        "Creating training net specified in net_param.",
        "Creating test net (#0) specified by test_net_param",
        "Creating test net (#1) specified by net_param",
        "Solver scaffolding done.",
    ]
    solver.step(1)
    assert any(re.fullmatch(r"Iteration 0 \(\S+ iter/s, \S+s/1 iters\), loss = \S+", line) for line in lines)
    assert "    Train net output #0: loss = " in "\n".join(lines)
    with pytest.raises(EngineError, match="test_iter must be specified for each test network"):
        param.ClearField("test_iter")
        create_solver(param, xp=np, log_fn=lines.append)


def test_deprecated_solver_type_enum_is_upgraded():
    param = text_format.Parse("solver_type: ADAM base_lr: 0.1", caffe_pb2.SolverParameter())
    param.net_param.CopyFrom(text_format.Parse(LEAST_SQUARES, caffe_pb2.NetParameter()))
    assert create_solver(param, xp=np, log_fn=lambda line: None).type == "Adam"
    param.type = "SGD"
    with pytest.raises(Exception, match="both the old solver_type: ADAM and the new type"):
        create_solver(param, xp=np, log_fn=lambda line: None)


@pytest.mark.parametrize(
    ("kind", "extra", "message"),
    [
        ("AdaGrad", "momentum: 0.9", "Momentum cannot be used with AdaGrad"),
        ("RMSProp", "momentum: 0.9", "Momentum cannot be used with RMSProp"),
        ("RMSProp", "rms_decay: 1", "rms_decay should lie between 0 and 1"),
    ],
)
def test_rules_refuse_settings_they_cannot_use(kind, extra, message):
    with pytest.raises(EngineError, match=message):
        solver_for(kind, extra)


@pytest.mark.parametrize("extra", ["momentum: 0.9 weight_decay: 0.01", "momentum: 0.9 iter_size: 2", ""])
def test_sgd_update_in_blocks_on_threads_equals_the_separate_stages(monkeypatch, extra):
    """SGD's fused CPU update, a cache-sized block at a time over three threads (a cache of 4 values
    per block: several blocks per thread, an odd last one), gives the separate stages' numbers to the
    bit: the same arithmetic in the same order, value by value."""
    from engine import parallel
    from engine.solvers.rules import SGDSolver

    monkeypatch.setattr(parallel, "_pool", parallel.Pool(3))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    monkeypatch.setattr(parallel, "MIN_SLICE", 1)
    monkeypatch.setattr(parallel, "cache_bytes", lambda: 64)  # 4 float64 values per block
    blocks, run_blocks = [], parallel.run_blocks

    def counted(task, *args):
        run_blocks(lambda a, b: blocks.append(b - a) or task(a, b), *args)

    monkeypatch.setattr(parallel, "run_blocks", counted)
    wide = LEAST_SQUARES.replace(f"dim: {N} dim: {D} }}", f"dim: {N} dim: 37 }}").replace(
        "num_output: 1 ", "num_output: 5 "
    )
    wide = wide.replace('bottom: "ip" bottom: "targets"', 'bottom: "ip1" bottom: "targets"')
    wide = wide.replace(
        'layer { name: "loss"',
        'layer { name: "ip1" type: "InnerProduct" bottom: "ip" top: "ip1" '
        'inner_product_param { num_output: 1 weight_filler { type: "gaussian" std: 1 } } }\n'
        'layer { name: "loss"',
    )
    solvers = []
    for fused in (True, False):
        param = text_format.Parse(
            f'type: "SGD" base_lr: 0.01 lr_policy: "fixed" max_iter: 10 random_seed: 7 {extra}',
            caffe_pb2.SolverParameter(),
        )
        param.net_param.CopyFrom(text_format.Parse(wide, caffe_pb2.NetParameter()))
        solver = create_solver(param, log_fn=lambda line: None)
        rng = np.random.default_rng(11)
        solver.net.blob_by_name("data").data[...] = rng.normal(size=(N, 37))
        solver.net.blob_by_name("targets").data[...] = rng.normal(size=(N, 1))
        if not fused:
            monkeypatch.setattr(SGDSolver, "fused_update", lambda self, i, rate: False)
        solver.step(3)
        solvers.append(solver)
    assert solvers[0].net.params[0].data.size == 185 and max(blocks) == 4 and 1 in blocks  # slices of 61-62
    for a, b in zip(solvers[0].net.learnable_params, solvers[1].net.learnable_params):
        np.testing.assert_array_equal(a.data, b.data)
