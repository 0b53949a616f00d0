"""The training package's solver (engine/export/package/files/caffe_solver.py) is a second copy of the
engine's update rules and lr policies, written for torch; these tests hold it to the engine's: for
every solver type and every policy, the same gradients give the same parameters, histories and rates
step after step (issue 27, point 4). An unknown solver type is refused at export, in one line."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from google.protobuf import text_format

from engine.export import ExportError
from engine.export.package import check_solver, package_solver_types
from engine.solvers import create_solver, solver_types
from engine.solvers.lr_policy import POLICIES
from proto import caffe_pb2

torch = pytest.importorskip("torch")

FILE = Path(__file__).resolve().parents[2] / "engine/export/package/files/caffe_solver.py"
STEPS = 12

NET = """
name: "tiny"
layer { name: "data" type: "Input" top: "x" top: "y"
        input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 4 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "z"
        param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.5 }
                              bias_filler { type: "constant" value: 0.1 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
"""

# Each policy's settings, chosen so that it changes the rate within STEPS iterations.
POLICY_SETTINGS = {
    "fixed": "",
    "step": "gamma: 0.5 stepsize: 3",
    "exp": "gamma: 0.9",
    "inv": "gamma: 0.1 power: 0.75",
    "multistep": "gamma: 0.5 stepvalue: 2 stepvalue: 5 stepvalue: 9",
    "poly": "power: 2 max_iter: 20",
    "sigmoid": "gamma: -0.5 stepsize: 6",
}
RULE_SETTINGS = {
    "SGD": "momentum: 0.9",
    "Nesterov": "momentum: 0.9",
    "AdaGrad": "delta: 1e-6",
    "RMSProp": "rms_decay: 0.9 delta: 1e-6",
    "AdaDelta": "momentum: 0.95 delta: 1e-6",
    "Adam": "momentum: 0.9 momentum2: 0.999 delta: 1e-8",
}


def package_solver() -> ModuleType:
    spec = importlib.util.spec_from_file_location("package_caffe_solver", FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def solver_param(kind: str, policy: str, extra: str = "") -> caffe_pb2.SolverParameter:
    text = (
        f'type: "{kind}" base_lr: 0.1 lr_policy: "{policy}" {POLICY_SETTINGS[policy]} '
        f"{RULE_SETTINGS[kind]} weight_decay: 0.01 random_seed: 3 {extra}"
    )
    param = text_format.Parse(text, caffe_pb2.SolverParameter())
    param.net_param.CopyFrom(text_format.Parse(NET, caffe_pb2.NetParameter()))
    return param


def run_both(param: caffe_pb2.SolverParameter) -> None:
    engine = create_solver(param, log_fn=lambda message: None)
    blobs = engine.net.learnable_params
    tensors = [torch.from_numpy(np.array(b.data, dtype=np.float32)) for b in blobs]
    learnable = [
        (t, float(engine.net.params_lr[i]), float(engine.net.params_weight_decay[i]))
        for i, t in enumerate(tensors)
    ]
    theirs = package_solver().CaffeSolver(learnable, param)
    grads = np.random.default_rng(7)
    for step in range(STEPS):
        for blob, tensor in zip(blobs, tensors):
            g = grads.standard_normal(blob.shape).astype(np.float32)
            blob.diff[...] = g
            tensor.grad = torch.from_numpy(g.copy())
        engine.apply_update()
        engine.iter += 1
        theirs.step()
        where = f"{param.type} {param.lr_policy} step {step}"
        # The rate is the same float32 computation in both (Caffe's GetLearningRate operand by operand):
        # equal to float32 rounding of the double power/exp, hence a relative 1e-6.
        assert theirs.rate == pytest.approx(engine.rate, rel=1e-6), where
        # Both update in float32 with the same operations, in an order that differs in places (torch's
        # fused a*b+c, lr multiplied before or after the division): each step may differ by a few ulps
        # of the parameter (1.2e-7 relative each); over 12 steps that stays well under 2e-5 relative
        # of values near 1 (atol 1e-6 covers values that pass near zero).
        for blob, tensor in zip(blobs, tensors):
            np.testing.assert_allclose(tensor.numpy(), blob.data, rtol=2e-5, atol=1e-6, err_msg=where)
        for mine, other in zip(engine.history, theirs.history()):
            np.testing.assert_allclose(other.numpy(), mine.data, rtol=2e-5, atol=1e-6, err_msg=where)
    engine.net.close()


def test_the_package_runs_exactly_the_engines_solver_types() -> None:
    assert set(package_solver_types()) == set(solver_types())
    assert set(package_solver().HISTORY) == set(solver_types())
    assert set(POLICY_SETTINGS) == set(POLICIES) and set(RULE_SETTINGS) == set(solver_types())


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("kind", solver_types())
def test_every_rule_and_policy_follows_the_engine(kind: str, policy: str) -> None:
    run_both(solver_param(kind, policy))


@pytest.mark.parametrize("kind", solver_types())
def test_clipping_l1_decay_and_iter_size_follow_the_engine(kind: str) -> None:
    # Clip low enough that every step is clipped; iter_size scales the gradient by 1/2.
    run_both(solver_param(kind, "step", 'clip_gradients: 1.5 regularization_type: "L1" iter_size: 2'))


def test_an_unknown_solver_type_is_refused_at_export_in_one_line() -> None:
    with pytest.raises(ExportError) as raised:
        check_solver(caffe_pb2.SolverParameter(type="Lion", lr_policy="fixed"))
    message = str(raised.value)
    assert message.splitlines() == [message]
    assert message.startswith("solver type 'Lion': the training package runs only ")
    assert "Adam" in message and "SGD" in message


def test_an_unknown_policy_is_refused_and_the_deprecated_enum_is_read() -> None:
    with pytest.raises(ExportError, match="lr_policy 'cosine'"):
        check_solver(caffe_pb2.SolverParameter(type="SGD", lr_policy="cosine"))
    check_solver(caffe_pb2.SolverParameter(solver_type=caffe_pb2.SolverParameter.ADAM, lr_policy="fixed"))
