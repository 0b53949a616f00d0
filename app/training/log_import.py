"""A training log (Caffe's glog lines, from `caffe train`, `main.py train` or a training package's
train.py) read back as a finished Run, so the training dock plots it like one of its own.

What is read: the solver printed after "Initializing solver from parameters:" (for the run's
settings and max_iter), `Iteration N (...), loss = X` (the smoothed loss), `Iteration N, lr = X`,
`Iteration N, Testing net (#K)` followed by `Test net output #J: NAME = X`, and the lines' clock
times for the seconds axis. Nothing in the file is executed; unreadable lines are skipped. A FIFO,
a device, a file past 512 MB or a solver block nested past any Caffe solver is refused (LogError).
"""

from __future__ import annotations

import datetime
import os
import re

import numpy as np
from google.protobuf import text_format

from app.training.job import TrainingJob
from app.training.run import Run
from engine.events import RunStatus
from proto import caffe_pb2
from proto.depth import depth_problem
from proto.inputs import open_regular

PREFIX = re.compile(r"^[IWEF](\d{4}) (\d\d):(\d\d):(\d\d)\.(\d+)\s+\d+ [^\]]*\] ?(.*)$")
LOSS = re.compile(r"^Iteration (\d+)(?: \([^)]*\))?, loss = (\S+)")
RATE = re.compile(r"^Iteration (\d+), lr = (\S+)")
TESTING = re.compile(r"^Iteration (\d+), Testing net \(#(\d+)\)")
OUTPUT = re.compile(r"^\s*Test net output #\d+: (\S+) = (\S+)")
SOLVER_END = re.compile(r"^(Creating|Solver scaffolding|Solving|Iteration|Restoring|Finetuning)")


class LogError(ValueError):
    """A file that holds no training: the message names it."""


def _seconds(match: re.Match[str]) -> float:
    _, h, m, s, micro = match.groups()[:5]
    return int(h) * 3600 + int(m) * 60 + int(s) + int(micro) / 10 ** len(micro)


def read_run(path: str, number: int) -> Run:
    """The run a log file records (LogError when it records no iteration)."""
    try:
        with open_regular(path, "text", "a training log") as f:  # a FIFO would hang the window
            lines = f.read().decode("utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise LogError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    messages: list[tuple[float | None, str]] = []
    for line in lines:
        match = PREFIX.match(line)
        messages.append((_seconds(match), match.group(6)) if match else (None, line))
    start = next((t for t, _ in messages if t is not None), 0.0)
    solver = caffe_pb2.SolverParameter()
    solver_lines: list[str] | None = None
    losses: dict[int, tuple[float, float]] = {}
    rates: dict[int, float] = {}
    tests: list[tuple[int, float, int, dict[str, float]]] = []
    for t, message in messages:
        seconds = (t - start) % 86400 if t is not None else 0.0  # a run past midnight keeps counting up
        if solver_lines is not None:
            if SOLVER_END.match(message):
                solver = _solver("\n".join(solver_lines), path)
                solver_lines = None
            else:
                solver_lines.append(message)
                continue
        if message.startswith("Initializing solver from parameters"):
            solver_lines = []
        elif m := LOSS.match(message):
            losses[int(m.group(1))] = (seconds, _number(m.group(2)))
        elif m := RATE.match(message):
            rates[int(m.group(1))] = _number(m.group(2))
        elif m := TESTING.match(message):
            tests.append((int(m.group(1)), seconds, int(m.group(2)), {}))
        elif (m := OUTPUT.match(message)) and tests:
            tests[-1][3][m.group(1)] = _number(m.group(2))
    if not losses:
        raise LogError(f"{path}: no 'Iteration N, loss = X' line: not a training log")
    name = os.path.basename(path)
    job = TrainingJob(
        solver, os.path.dirname(os.path.abspath(path)), "log", "", text_format.MessageToString(solver)
    )
    run = Run(number, job)
    run.name = f"{name}"
    run.started = datetime.datetime.fromtimestamp(os.path.getmtime(path))
    rows = [(i, s, loss, rates.get(i, np.nan)) for i, (s, loss) in sorted(losses.items())]
    run.add_points(np.asarray(rows, np.float64))
    for iteration, seconds, net, scores in tests:
        run.add_test(iteration, seconds, net, scores)
    if solver.max_iter:  # Caffe prints the loss once more at max_iter, after the last iteration
        run.iter = min(run.iter, solver.max_iter)
    run.max_iter = solver.max_iter or run.iter
    run.log = [(0.0, line) for line in lines]
    run.status = RunStatus.FINISHED
    return run


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _solver(text: str, path: str) -> caffe_pb2.SolverParameter:
    deep = depth_problem(text)  # protobuf's parser would recurse into it
    if deep is not None:
        raise LogError(f"{path}: the solver it prints has {deep[0]}")
    try:
        return text_format.Parse(text, caffe_pb2.SolverParameter(), allow_unknown_field=True)
    except text_format.ParseError:
        return caffe_pb2.SolverParameter()
