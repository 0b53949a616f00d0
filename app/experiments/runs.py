"""An ended experiment's variants as runs of the Training dock's Runs tab, one each, the variant in
its name ("Run 3 · xavier"): overlaid with the other runs, their settings the variant's (the
filler in the net's text, so the Runs tab's diff between two of them is the filler)."""

from __future__ import annotations

import numpy as np

from app.netio import net_to_text, solver_to_text
from app.training.job import TrainingJob
from app.training.run import Run
from engine.events import RunStatus
from engine.experiments.compare_init import CompareInit
from proto import caffe_pb2


def variant_runs(experiment: CompareInit, first_number: int, base_dir: str) -> list[Run]:
    runs = []
    stopped = experiment.status is RunStatus.STOPPED
    for k, (variant, curves) in enumerate(zip(experiment.variants, experiment.curves)):
        solver = experiment.solver_param(variant)
        net = solver.train_net_param if solver.train_net_param.layer else solver.net_param
        settings = caffe_pb2.SolverParameter()
        settings.CopyFrom(solver)
        for name in ("net_param", "train_net_param", "test_net_param"):
            settings.ClearField(name)
        solver_text, net_text = solver_to_text(settings), net_to_text(net)
        canonical = f"{solver_text.rstrip()}\n\n{net_text.rstrip()}\n"
        job = TrainingJob(solver, base_dir, "cpu", net_text, solver_text, canonical=canonical)
        run = Run(first_number + k, job)
        run.name = f"Run {first_number + k} · {variant.name}"
        n = min(len(curves.iters), len(curves.seconds), len(curves.loss), len(curves.lr))
        rows = np.column_stack([curves.iters[:n], curves.seconds[:n], curves.loss[:n], curves.lr[:n]])
        run.add_points(rows.astype(np.float64).reshape(-1, 4))
        when = dict(zip(curves.iters[:n], curves.seconds[:n]))
        for iteration, scores in curves.tests:
            run.add_test(iteration, when.get(iteration - 1, 0.0), 0, scores)
        run.max_iter = experiment.iterations
        run.error = curves.error
        run.status = (
            RunStatus.FAILED if curves.error else RunStatus.STOPPED if stopped else RunStatus.FINISHED
        )
        said = curves.verdict.text if curves.verdict else ""
        run.log = [(0.0, f"Compare Initialisations, weights from {variant.spec}: {said}")]
        runs.append(run)
    return runs
