"""CUDA graphs for the training step: the graph path gives the eager path's numbers exactly."""

from __future__ import annotations

import re

import numpy as np
import pytest
from google.protobuf import text_format

from engine import backend, graphs
from engine.graphs import GraphStep
from engine.solvers import create_solver
from proto import caffe_pb2

BATCH = 8
LENET = """
name: "LeNet"
layer { name: "data" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 8 dim: 1 dim: 28 dim: 28 } shape { dim: 8 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 4 kernel_size: 5 weight_filler { type: "xavier" } } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
        convolution_param { num_output: 6 kernel_size: 5 weight_filler { type: "xavier" } } }
layer { name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool2" top: "ip1"
        inner_product_param { num_output: 20 weight_filler { type: "xavier" } } }
layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
        inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
"""


def make_solver(xp):
    param = text_format.Parse(
        'type: "SGD" base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: "inv" gamma: 0.1 '
        "power: 0.75 max_iter: 100 random_seed: 3",
        caffe_pb2.SolverParameter(),
    )
    param.net_param.CopyFrom(text_format.Parse(LENET, caffe_pb2.NetParameter()))
    return create_solver(param, xp=xp, log_fn=lambda line: None)


def feed(solver, xp, step: int, labels=None) -> None:
    rng = np.random.default_rng(step)
    solver.net.blob_by_name("data").data[...] = xp.asarray(rng.random((BATCH, 1, 28, 28), dtype=np.float32))
    if labels is None:
        labels = rng.integers(0, 10, BATCH)
    solver.net.blob_by_name("label").data[...] = xp.asarray(np.asarray(labels, np.float32))


def train(xp, steps: int) -> tuple[list[float], list[np.ndarray]]:
    solver = make_solver(xp)
    losses = []
    for step in range(steps):
        feed(solver, xp, step)
        solver.step(1)
        losses.append(solver.smoothed_loss)
    return losses, [backend.to_host(p.data) for p in solver.net.learnable_params]


def test_graph_body_is_the_nets_forward_backward():
    """The graph runs GraphStep.body: on the CPU (eager) it must be Net.forward_backward exactly."""
    a, b = make_solver(np), make_solver(np)
    for solver in (a, b):
        feed(solver, np, 0)
        solver.net.clear_param_diffs()
    step = GraphStep(b.net)
    assert step.sources == 1 and not step.broken
    assert a.net.forward_backward() == float(step.body())
    for p, q in zip(a.net.learnable_params, b.net.learnable_params):
        np.testing.assert_array_equal(p.diff, q.diff)
    np.testing.assert_array_equal(a.net.blob_by_name("data").diff, b.net.blob_by_name("data").diff)


def test_graphs_only_for_safe_nets():
    net = make_solver(np).net
    assert not GraphStep(net).usable()  # numpy arrays: nothing to capture
    param = text_format.Parse(LENET.replace('type: "ReLU"', 'type: "Dropout"'), caffe_pb2.NetParameter())
    from engine.net import Net

    assert GraphStep(Net(param, phase=caffe_pb2.TRAIN, xp=np)).broken  # random draws each iteration


@pytest.mark.gpu
def test_graph_training_matches_eager_exactly(xp, monkeypatch):
    if xp is np:
        pytest.skip("CUDA graphs are for the GPU")
    monkeypatch.setattr(graphs, "ENABLED", False)
    eager_losses, eager_params = train(xp, 6)
    monkeypatch.setattr(graphs, "ENABLED", True)
    graph_losses, graph_params = train(xp, 6)
    assert graph_losses == eager_losses
    for e, g in zip(eager_params, graph_params):
        np.testing.assert_array_equal(g, e)


@pytest.mark.gpu
def test_graph_is_replayed_and_still_checks_labels(xp, monkeypatch):
    if xp is np:
        pytest.skip("CUDA graphs are for the GPU")
    monkeypatch.setattr(graphs, "ENABLED", True)
    solver = make_solver(xp)
    for step in range(4):
        feed(solver, xp, step)
        solver.step(1)
    assert solver.graph_step.graph is not None and not solver.graph_step.broken
    feed(solver, xp, 9, labels=[0, 1, 2, 3, 4, 5, 6, 12])
    with pytest.raises(Exception, match="labels must lie in"):
        solver.step(1)


def test_no_update_in_a_graph_on_the_cpu():
    assert make_solver(np).graph_update() is None  # numpy: apply_update runs after the step, as ever


SPEED = re.compile(r"\(\S+ iter/s, \S+s/\d+ iters\), ")  # the wall clock's part of a display line


def train_logged(xp, solver_text: str, steps: int) -> tuple[list[str], list[np.ndarray], object]:
    param = text_format.Parse(solver_text, caffe_pb2.SolverParameter())
    param.net_param.CopyFrom(text_format.Parse(LENET, caffe_pb2.NetParameter()))
    lines: list[str] = []
    solver = create_solver(param, xp=xp, log_fn=lines.append)
    for step in range(steps):
        feed(solver, xp, step)
        solver.step(1)
    return (
        [SPEED.sub("", line) for line in lines if line.startswith(("Iteration", "MultiStep", "    Train"))],
        [backend.to_host(p.data) for p in solver.net.learnable_params],
        solver,
    )


MULTISTEP = (
    'type: "SGD" base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: "multistep" gamma: 0.5 '
    "stepvalue: 2 stepvalue: 4 display: 1 max_iter: 100 random_seed: 3"
)


@pytest.mark.gpu
def test_the_update_runs_inside_the_graph_with_the_same_numbers_and_log(xp, monkeypatch):
    """SGD's update is captured with forward and backward (its rate from the device, changing at each
    multistep): parameters equal the eager run's bit for bit, and the log says the same lines."""
    if xp is np:
        pytest.skip("CUDA graphs are for the GPU")
    monkeypatch.setattr(graphs, "ENABLED", False)
    eager_log, eager_params, _ = train_logged(xp, MULTISTEP, 7)
    monkeypatch.setattr(graphs, "ENABLED", True)
    graph_log, graph_params, solver = train_logged(xp, MULTISTEP, 7)
    assert solver.graph_step.graph is not None and solver.graph_step.captured[1]  # the update is in it
    assert graph_log == eager_log
    assert any(line.startswith("MultiStep Status: Iteration 4") for line in graph_log)
    for e, g in zip(eager_params, graph_params):
        np.testing.assert_array_equal(g, e)


@pytest.mark.gpu
@pytest.mark.parametrize("extra", ["clip_gradients: 0.01", "iter_size: 2", 'regularization_type: "L1"'])
def test_updates_that_need_the_host_run_after_the_graph(xp, monkeypatch, extra):
    if xp is np:
        pytest.skip("CUDA graphs are for the GPU")
    text = MULTISTEP + " " + extra
    monkeypatch.setattr(graphs, "ENABLED", False)
    eager_log, eager_params, _ = train_logged(xp, text, 5)
    monkeypatch.setattr(graphs, "ENABLED", True)
    graph_log, graph_params, solver = train_logged(xp, text, 5)
    assert solver.graph_update() is None
    assert solver.graph_step.graph is not None and not solver.graph_step.captured[1]
    assert graph_log == eager_log
    for e, g in zip(eager_params, graph_params):
        np.testing.assert_array_equal(g, e)


def test_a_capture_on_one_thread_is_not_seen_on_another():
    """The window may train and run an initialisation experiment at once, each capturing on its own
    thread: a label check collected during one capture must not join the other's graph."""
    import threading

    graphs._capture.checks = []
    try:
        seen: list[object] = []

        def other() -> None:
            seen.append(graphs.capturing())
            try:
                graphs.after_launch(lambda: None)
            except RuntimeError as exc:
                seen.append(str(exc))

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert graphs.capturing() and seen == [False, "after_launch outside a capture"]
        graphs.after_launch(lambda: None)
        assert len(graphs._capture.checks) == 1
    finally:
        graphs._capture.checks = None
    assert not graphs.capturing()
