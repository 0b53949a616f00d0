"""An experiment's variants as runs of the Training dock's Runs tab, one each, the variant in its name
("Run 3 · xavier"): made when the variants start (running), fed their points and tests as they train,
and ended with them (a stopped experiment keeps what its runs did). Overlaid with the other runs,
their settings the variant's (the filler in the net's text, so the Runs tab's diff between two of them
is the filler). The experiment's worker appends to the curves that are read here, in the GUI thread:
only what every list already holds is taken."""

from __future__ import annotations

import itertools

import numpy as np

from app.netio import net_to_text, solver_to_text
from app.training.job import TrainingJob
from app.training.run import Run
from engine.events import RunStatus
from engine.experiments.compare_init import CompareInit, Curves, Variant
from proto import caffe_pb2


def variant_run(experiment: CompareInit, variant: Variant, number: int, base_dir: str) -> Run:
    solver = experiment.solver_param(variant)
    net = solver.train_net_param if solver.train_net_param.layer else solver.net_param
    settings = caffe_pb2.SolverParameter()
    settings.CopyFrom(solver)
    for name in ("net_param", "train_net_param", "test_net_param"):
        settings.ClearField(name)
    solver_text, net_text = solver_to_text(settings), net_to_text(net)
    canonical = f"{solver_text.rstrip()}\n\n{net_text.rstrip()}\n"
    job = TrainingJob(solver, base_dir, "cpu", net_text, solver_text, canonical=canonical)
    run = Run(number, job)
    run.name = f"Run {number} · {variant.name}"
    run.max_iter = experiment.iterations
    run.status = RunStatus.RUNNING
    run.log = [(0.0, f"Compare Initialisations, weights from {variant.spec}")]
    return run


class VariantRuns:
    def __init__(self, experiment: CompareInit, first_number: int, base_dir: str) -> None:
        self.experiment = experiment
        self.runs = [
            variant_run(experiment, v, first_number + k, base_dir) for k, v in enumerate(experiment.variants)
        ]
        self._fed = [(0, 0)] * len(self.runs)  # (points, tests) given to each run so far

    def feed(self) -> None:
        """Give every run what its variant recorded since the last feed."""
        for k, (run, curves) in enumerate(zip(self.runs, self.experiment.curves)):
            self._fed[k] = _feed(run, curves, *self._fed[k])

    def set_status(self, status: RunStatus) -> list[Run]:
        """The runs still going, now at ``status`` (paused, running again)."""
        going = [run for run in self.runs if run.active]
        for run in going:
            run.status = status
            run.version += 1
        return going

    def fail(self, k: int, message: str) -> Run:
        run = self.runs[k]
        self.feed()
        run.error, run.status = message, RunStatus.FAILED
        run.version += 1
        return run

    def end(self, status: RunStatus, error: str | None = None) -> list[Run]:
        """Every run complete: its last points, how it ended and its verdict (``status``: the
        experiment's, for the runs that did not fail on their own; ``error``, why it failed)."""
        self.feed()
        for run, curves in zip(self.runs, self.experiment.curves):
            run.error = run.error or curves.error or (error if status is RunStatus.FAILED else None)
            run.status = RunStatus.FAILED if run.error else status
            if curves.verdict is not None:
                run.log.append((run.seconds, f"Verdict: {curves.verdict.text}"))
            run.version += 1
        return self.runs


def _feed(run: Run, curves: Curves, points: int, tests: int) -> tuple[int, int]:
    n = min(len(curves.iters), len(curves.seconds), len(curves.loss), len(curves.lr))
    if n > points:
        rows = np.column_stack(
            [curves.iters[points:n], curves.seconds[points:n], curves.loss[points:n], curves.lr[points:n]]
        )
        run.add_points(rows.astype(np.float64).reshape(-1, 4))
    # A test at N follows iteration N - 1 (a test at 0, none): its point must be here for its time.
    scored = list(itertools.takewhile(lambda test: test[0] <= n, curves.tests[tests:]))
    for iteration, scores in scored:
        run.add_test(iteration, curves.seconds[iteration - 1] if iteration > 0 else 0.0, 0, scores)
    return max(n, points), tests + len(scored)
