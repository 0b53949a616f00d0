"""The training loop driven from another thread: events, pause/resume/stop, snapshots, failures."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from google.protobuf import text_format

from engine import events
from engine.events import RunStatus
from engine.solvers import create_solver
from engine.trainer import Trainer
from proto import caffe_pb2

NET = """
name: "tiny"
layer { name: "input" type: "DummyData" top: "x" top: "y"
        dummy_data_param { shape { dim: 16 dim: 4 } shape { dim: 16 dim: 1 }
                           data_filler { type: "gaussian" std: 1 } data_filler { type: "gaussian" std: 1 } } }
layer { name: "fc" type: "InnerProduct" bottom: "x" top: "fc"
        inner_product_param { num_output: 1 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "fc" bottom: "y" top: "loss" }
"""


def solver_param(extra: str = "") -> caffe_pb2.SolverParameter:
    param = text_format.Parse(
        'type: "SGD" base_lr: 0.01 momentum: 0.9 lr_policy: "fixed" max_iter: 40 display: 10 random_seed: 5',
        caffe_pb2.SolverParameter(),
    )
    text_format.Merge(extra, param)
    param.net_param.CopyFrom(text_format.Parse(NET, caffe_pb2.NetParameter()))
    return param


class Recorder:
    def __init__(self) -> None:
        self.events: list[events.Event] = []
        self.lock = threading.Lock()

    def __call__(self, event: events.Event) -> None:
        with self.lock:
            self.events.append(event)

    def kinds(self) -> list[type]:
        with self.lock:
            return [type(e) for e in self.events]

    def of(self, kind: type) -> list:
        with self.lock:
            return [e for e in self.events if isinstance(e, kind)]


def test_events_of_a_whole_run(tmp_path):
    recorder = Recorder()
    prefix = str(tmp_path / "tiny")
    trainer = Trainer(
        lambda: create_solver(
            solver_param(f'snapshot: 20 snapshot_prefix: "{prefix}"'), log_fn=lambda s: None
        ),
        recorder,
    )
    assert trainer.run()
    kinds = recorder.kinds()
    assert kinds[0] is events.Started and kinds[-1] is events.Finished
    iterations = recorder.of(events.Iteration)
    assert [p.iter for p in iterations] == list(range(40))
    assert all(p.lr == pytest.approx(0.01) for p in iterations)
    assert [p.iter for p in recorder.of(events.Snapshotted)] == [20, 40]
    assert (tmp_path / "tiny_iter_40.solverstate").exists()
    assert (
        recorder.of(events.Finished)[0].status is RunStatus.FINISHED and trainer.status is RunStatus.FINISHED
    )


def test_pause_resume_and_stop_from_another_thread(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # stopping writes the final snapshot into the working directory
    recorder = Recorder()
    paused_at = threading.Event()
    gate = threading.Event()

    def listener(event):
        recorder(event)
        if isinstance(event, events.Iteration) and event.iter == 5:
            trainer.pause()
        if isinstance(event, events.Paused):
            paused_at.set()

    trainer = Trainer(
        lambda: create_solver(solver_param("max_iter: 100000"), log_fn=lambda s: None), listener
    )
    worker = threading.Thread(target=lambda: (trainer.run(), gate.set()))
    worker.start()
    assert paused_at.wait(10)
    count = len(recorder.of(events.Iteration))
    assert trainer.paused and count == 6  # iterations 0..5, then it waits between iterations
    assert trainer.status is RunStatus.PAUSED
    threading.Event().wait(0.2)
    assert len(recorder.of(events.Iteration)) == count  # nothing runs while paused
    trainer.resume()
    assert trainer.status is RunStatus.RUNNING
    while len(recorder.of(events.Iteration)) < count + 5:
        threading.Event().wait(0.01)
    trainer.stop()
    assert gate.wait(10)
    worker.join()
    assert events.Resumed in recorder.kinds()
    assert recorder.of(events.Finished)[0].status is RunStatus.STOPPED


def test_snapshot_on_request(tmp_path):
    recorder = Recorder()
    prefix = str(tmp_path / "now")

    def listener(event):
        recorder(event)
        if isinstance(event, events.Iteration) and event.iter == 3:
            trainer.snapshot()

    trainer = Trainer(
        lambda: create_solver(
            solver_param(f'max_iter: 10 snapshot_prefix: "{prefix}" snapshot_after_train: false'),
            log_fn=lambda s: None,
        ),
        listener,
    )
    assert trainer.run()
    assert [p.iter for p in recorder.of(events.Snapshotted)] == [4]
    assert (tmp_path / "now_iter_4.caffemodel").exists()


def test_non_finite_loss_stops_the_run_naming_the_layer(tmp_path):
    recorder = Recorder()
    prefix = str(tmp_path / "nan")
    trainer = Trainer(
        lambda: create_solver(
            solver_param(f'base_lr: 1e6 snapshot: 1 snapshot_prefix: "{prefix}"'), log_fn=lambda s: None
        ),
        recorder,
    )
    assert not trainer.run()
    message = recorder.of(events.Failed)[0].message
    assert trainer.status is RunStatus.FAILED
    assert "loss is" in message and "first non-finite output: layer 'loss'" in message
    snapshots = sorted(tmp_path.glob("nan_iter_*.caffemodel"))
    assert snapshots  # earlier snapshots stay intact and readable
    net = caffe_pb2.NetParameter.FromString(snapshots[0].read_bytes())
    assert np.isfinite(np.asarray(net.layer[1].blobs[0].data)).all()


def test_setup_errors_are_reported_not_raised():
    recorder = Recorder()
    bad = solver_param()
    bad.net_param.layer[1].bottom[0] = "nope"
    trainer = Trainer(lambda: create_solver(bad, log_fn=lambda s: None), recorder)
    assert not trainer.run()
    assert "Unknown bottom blob 'nope'" in recorder.of(events.Failed)[0].message


RESUMABLE = """
name: "resumable"
layer { name: "input" type: "DummyData" top: "x" top: "y"
        dummy_data_param { shape { dim: 16 dim: 8 } shape { dim: 16 dim: 1 }
                           data_filler { type: "gaussian" std: 1 } data_filler { type: "gaussian" std: 1 } } }
layer { name: "fc1" type: "InnerProduct" bottom: "x" top: "fc1"
        inner_product_param { num_output: 16 weight_filler { type: "xavier" } } }
layer { name: "drop" type: "Dropout" bottom: "fc1" top: "fc1" dropout_param { dropout_ratio: 0.3 } }
layer { name: "fc2" type: "InnerProduct" bottom: "fc1" top: "fc2"
        inner_product_param { num_output: 1 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "fc2" bottom: "y" top: "loss" }
"""


def losses_of(solver, iterations: int) -> list[float]:
    seen: list[float] = []
    solver.listeners.append(lambda e: seen.append(e.loss) if isinstance(e, events.Iteration) else None)
    solver.step(iterations)
    return seen


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_stop_and_resume_reproduces_the_uninterrupted_losses(tmp_path, kind):
    def make(extra: str = ""):
        param = text_format.Parse(
            f'type: "{kind}" base_lr: 0.01 momentum: 0.9 lr_policy: "step" gamma: 0.5 stepsize: 7 '
            f'max_iter: 30 random_seed: 42 snapshot_prefix: "{tmp_path / "r"}" {extra}',
            caffe_pb2.SolverParameter(),
        )
        param.net_param.CopyFrom(text_format.Parse(RESUMABLE, caffe_pb2.NetParameter()))
        return create_solver(param, log_fn=lambda s: None)

    straight = losses_of(make(), 20)
    first = make()
    head = losses_of(first, 9)
    _, state = first.snapshot()
    resumed = make()
    resumed.restore(state)
    tail = losses_of(resumed, 11)
    np.testing.assert_allclose(head + tail, straight, rtol=1e-5, atol=1e-7)


LMDB_NET = """
name: "lmdb"
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TRAIN }
        transform_param { scale: 0.00390625 mirror: true }
        data_param { source: "train_lmdb" backend: LMDB batch_size: 8 } }
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TEST }
        transform_param { scale: 0.00390625 }
        data_param { source: "test_lmdb" backend: LMDB batch_size: 10 } }
layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc"
        inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "acc" type: "Accuracy" bottom: "fc" bottom: "label" top: "acc" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc" bottom: "label" top: "loss" }
"""


def test_resume_with_lmdb_data_and_test_nets_reproduces_losses_and_scores(tmp_path, monkeypatch):
    from engine.data.lmdb_writer import write_datum_lmdb

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    write_datum_lmdb(
        tmp_path / "train_lmdb", rng.integers(0, 256, (37, 1, 4, 4), dtype=np.uint8), rng.integers(0, 3, 37)
    )
    write_datum_lmdb(
        tmp_path / "test_lmdb", rng.integers(0, 256, (25, 1, 4, 4), dtype=np.uint8), rng.integers(0, 3, 25)
    )

    def make():
        param = text_format.Parse(
            'type: "SGD" base_lr: 0.1 momentum: 0.9 lr_policy: "fixed" max_iter: 30 random_seed: 3 '
            'test_iter: 2 test_interval: 4 snapshot_prefix: "s"',
            caffe_pb2.SolverParameter(),
        )
        param.net_param.CopyFrom(text_format.Parse(LMDB_NET, caffe_pb2.NetParameter()))
        return create_solver(param, log_fn=lambda s: None)

    def record(solver, iterations):
        seen: list[tuple] = []

        def note(e: events.Event) -> None:
            if isinstance(e, events.Iteration):
                seen.append(("iteration", e.loss))
            elif isinstance(e, events.Tested):
                seen.append(("test", e.scores))

        solver.listeners.append(note)
        solver.step(iterations)
        return seen

    straight = record(make(), 14)
    first = make()
    head = record(first, 6)
    _, state = first.snapshot()
    resumed = make()
    resumed.restore(state)
    tail = record(resumed, 8)
    got = head + tail
    assert [k for k, _ in got] == [k for k, _ in straight]
    for (_, a), (_, b) in zip(got, straight):  # losses, and test scores by name
        assert a == pytest.approx(b, rel=1e-5)
    for solver in (first, resumed):
        solver.net.close()
