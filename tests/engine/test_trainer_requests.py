"""The Trainer's one request queue and its RunStatus: requests from another thread, taken between
two iterations; work on the solver done by the training thread while it runs, and at once by the
caller while the run is paused or over."""

from __future__ import annotations

import threading

from engine import events
from engine.events import RunStatus
from engine.solvers import create_solver
from engine.trainer import Trainer
from tests.engine.test_trainer import Recorder, solver_param


def paused_run(tmp_path, extra: str = ""):
    """A long run started in its own thread and paused after iteration 2; (trainer, recorder, thread)."""
    recorder = Recorder()
    paused = threading.Event()
    statuses: list[RunStatus] = []

    def listener(event):
        recorder(event)
        if isinstance(event, events.Iteration) and event.iter == 2:
            trainer.pause()
            statuses.append(trainer.status)  # asked for, not yet reached
        if isinstance(event, events.Paused):
            paused.set()

    prefix = tmp_path / "run"
    trainer = Trainer(
        lambda: create_solver(
            solver_param(f'max_iter: 100000 snapshot_prefix: "{prefix}" {extra}'), log_fn=lambda s: None
        ),
        listener,
    )
    assert trainer.status is RunStatus.STARTING
    thread = threading.Thread(target=trainer.run, name="training")
    thread.start()
    assert paused.wait(10)
    assert statuses == [RunStatus.PAUSING] and trainer.status is RunStatus.PAUSED
    return trainer, recorder, thread


def test_pause_then_stop_from_another_thread_ends_stopped_with_the_snapshot_written(tmp_path):
    trainer, recorder, thread = paused_run(tmp_path)
    trainer.stop()
    assert trainer.status is RunStatus.STOPPING
    thread.join(10)
    assert not thread.is_alive() and trainer.status is RunStatus.STOPPED
    finished = recorder.of(events.Finished)
    assert [f.status for f in finished] == [RunStatus.STOPPED] and finished[0].iter == 3
    assert [s.iter for s in recorder.of(events.Snapshotted)] == [3]  # snapshot_after_train
    assert (tmp_path / "run_iter_3.caffemodel").exists() and (tmp_path / "run_iter_3.solverstate").exists()
    assert events.Resumed not in recorder.kinds()  # stopped while paused: never ran again


def test_while_paused_work_and_snapshots_are_done_at_once_in_the_callers_thread(tmp_path):
    trainer, recorder, thread = paused_run(tmp_path, "snapshot_after_train: false")
    answers: list = []

    def work(solver):
        return solver.iter, threading.current_thread().name

    trainer.submit(work, lambda result, error: answers.append((result, error)))
    assert answers == [((3, threading.current_thread().name), None)]  # done before submit returned
    trainer.snapshot()
    assert [s.iter for s in recorder.of(events.Snapshotted)] == [3]
    assert (tmp_path / "run_iter_3.caffemodel").exists() and trainer.status is RunStatus.PAUSED
    assert len(recorder.of(events.Iteration)) == 3  # still between iterations 2 and 3
    trainer.submit(lambda solver: 1 / 0, lambda result, error: answers.append((result, error)))
    assert answers[-1] == (None, "ZeroDivisionError: division by zero")
    trainer.resume()
    done = threading.Event()
    trainer.submit(work, lambda result, error: (answers.append((result, error)), done.set()))
    assert done.wait(10) and answers[-1][0][1] == "training"  # running: between two iterations
    trainer.stop()
    thread.join(10)
    assert trainer.status is RunStatus.STOPPED


def test_requests_that_do_not_apply_change_nothing(tmp_path):
    trainer, recorder, thread = paused_run(tmp_path, "snapshot_after_train: false")
    trainer.pause()  # already paused
    assert trainer.status is RunStatus.PAUSED
    trainer.resume()
    assert trainer.status is RunStatus.RUNNING
    trainer.resume()  # running already: nothing queued, nothing emitted
    while len(recorder.of(events.Iteration)) < 6:
        threading.Event().wait(0.01)
    trainer.stop()
    trainer.stop()
    thread.join(10)
    assert recorder.kinds().count(events.Resumed) == 1 and recorder.kinds().count(events.Paused) == 1
    trainer.pause()
    trainer.stop()
    assert trainer.status is RunStatus.STOPPED  # the run is over: requests are ignored


def test_after_the_run_work_is_done_in_the_callers_thread(tmp_path):
    param = solver_param(f'max_iter: 3 snapshot_prefix: "{tmp_path / "done"}"')
    trainer = Trainer(lambda: create_solver(param, log_fn=lambda s: None))
    assert trainer.run() and trainer.status is RunStatus.FINISHED
    answers: list = []
    trainer.submit(
        lambda solver: (solver.iter, threading.current_thread()), lambda r, e: answers.append((r, e))
    )
    assert answers == [((3, threading.current_thread()), None)]


def test_a_run_that_failed_to_build_answers_work_with_an_error():
    bad = solver_param()
    bad.net_param.layer[1].bottom[0] = "nope"
    trainer = Trainer(lambda: create_solver(bad, log_fn=lambda s: None))
    assert not trainer.run() and trainer.status is RunStatus.FAILED
    answers: list = []
    trainer.submit(lambda solver: solver.iter, lambda r, e: answers.append((r, e)))
    assert answers == [(None, "the run has no net (it failed before it was built)")]
