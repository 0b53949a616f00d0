"""The app while it trains: how late a 10 ms GUI timer fires, and training speed against `main.py train`.

    python -m bench.gui_responsiveness [--iters 400] [--solver S.prototxt] [--gpu] [--repeat 3]

Trains the same solver (a copy: max_iter = --iters, display every 20, no snapshots) headless
with `main.py train` in a subprocess and in the app (Train in the main window, the dock showing
its live curves), alternating, --repeat times each. While the app trains, a 10 ms QTimer records
when it fires; its delay is the gap between two firings beyond 10 ms.

Speed is read from the solver's own lines "Iteration N (T s), loss = ...": 20 iterations per
line, test phases excluded. The median over all runs of each side is compared, so a burst of
other work on a shared machine does not decide the result; the whole-run rates (first
"Iteration 0" to "Optimization Done.", tests included, best of each side) are printed too.
Goals: p95 delay < 50 ms, app speed >= 0.90 x `main.py train`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
LENET = REPO / "resources" / "examples" / "mnist" / "lenet_solver.prototxt"
GLOG = re.compile(r"^[IWEF](\d{4}) (\d\d:\d\d:\d\d\.\d{6}) +\d+ \S+\] (.*)$")
DISPLAY = re.compile(r"^Iteration (\d+) \(([\d.]+)s\), loss")
Lines = list[tuple[float, str]]  # (seconds, the solver's line)


def prepare(solver: Path, iters: int, folder: Path) -> Path:
    """A copy of the solver's folder with max_iter = iters, display 20 and no snapshots."""
    shutil.copytree(solver.parent, folder, dirs_exist_ok=True)
    path = folder / solver.name
    text = re.sub(r"(?m)^\s*(max_iter|display|snapshot|snapshot_after_train)\s*:.*$", "", path.read_text())
    path.write_text(text + f"\nmax_iter: {iters}\ndisplay: 20\nsnapshot: 0\nsnapshot_after_train: false\n")
    return path


def whole_run(lines: Lines, iters: int) -> float:
    """Iterations per second from the first "Iteration 0" line to "Optimization Done."."""
    start = next(t for t, line in lines if re.match(r"Iteration 0\b", line.strip()))
    end = next(t for t, line in lines if line.strip() == "Optimization Done.")
    return iters / (end - start)


def interval_rates(lines: Lines) -> list[float]:
    """Iterations per second of each display interval after the first (no test phase inside)."""
    rates, previous = [], None
    for _, line in lines:
        m = DISPLAY.match(line.strip())
        if m:
            iteration, seconds = int(m.group(1)), float(m.group(2))
            if previous is not None and seconds > 0:
                rates.append((iteration - previous) / seconds)
            previous = iteration
    return rates


def train_cli(solver: Path, gpu: bool, env: dict[str, str]) -> Lines:
    """The log lines of `main.py train` on ``solver``, with their glog times."""
    command = [sys.executable, str(REPO / "main.py"), "train", "--solver", str(solver)] + (
        ["--gpu"] if gpu else []
    )
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=solver.parent, check=False)
    if done.returncode != 0:
        raise SystemExit(f"main.py train failed:\n{done.stderr[-2000:]}")
    lines = []
    for raw in (done.stdout + done.stderr).splitlines():
        m = GLOG.match(raw)
        if m:
            t = datetime.strptime(m.group(2), "%H:%M:%S.%f")
            lines.append((t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6, m.group(3)))
    return lines


def train_app(solver: Path, gpu: bool) -> tuple[Lines, np.ndarray]:
    """(the run's log lines, the 10 ms timer's delays in ms) of a run started with Train in the app."""
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from app.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow()
    window.resize(1400, 900)
    window.open_file(solver)
    window.show()
    if gpu:
        window.training.device.setCurrentIndex(1)
    ticks: list[float] = []
    timer = QTimer(interval=10, timerType=Qt.TimerType.PreciseTimer)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    controller = window.training.controller

    def check() -> None:
        if controller.current is not None and not controller.current.active:
            app.quit()

    watcher = QTimer(interval=50, timeout=check)
    window.training.train_action.trigger()
    timer.start()
    watcher.start()
    app.exec()
    timer.stop()
    watcher.stop()
    run = controller.current
    if run.status != "finished":
        raise SystemExit(f"the app's run ended {run.status}: {run.error}")
    window.close()
    return run.log, (np.diff(ticks) - 0.010) * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--solver", type=Path, default=LENET)
    parser.add_argument("--iters", type=int, default=400)
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, alternating")
    args = parser.parse_args(argv)
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(REPO))
    from engine.data import mnist, paths

    env = dict(os.environ)
    if paths.data_root() is None:  # the app finds the bundled MNIST by itself; tell the CLI where it is
        env[paths.ENV_VAR] = str(mnist.ensure_mnist())
    cli_logs, app_logs, delays = [], [], []
    with tempfile.TemporaryDirectory(prefix="barista-bench-") as tmp:
        solver = prepare(args.solver.resolve(), args.iters, Path(tmp))
        for _ in range(args.repeat):
            cli_logs.append(train_cli(solver, args.gpu, env))
            log, delay = train_app(solver, args.gpu)
            app_logs.append(log)
            delays.append(delay)
    ticks = np.concatenate(delays)
    p95 = float(np.percentile(ticks, 95))
    cli = float(np.median([r for log in cli_logs for r in interval_rates(log)]))
    app = float(np.median([r for log in app_logs for r in interval_rates(log)]))
    cli_whole = max(whole_run(log, args.iters) for log in cli_logs)
    app_whole = max(whole_run(log, args.iters) for log in app_logs)
    ratio = app / cli
    where = "GPU" if args.gpu else "CPU"
    print(f"{args.solver.name}, {args.iters} iterations x {args.repeat} runs each, {where}")
    print(
        f"GUI timer (10 ms) while training: p95 delay {p95:.1f} ms (p50 {np.percentile(ticks, 50):.1f}, "
        f"max {ticks.max():.1f}, {len(ticks)} ticks); goal < 50 ms: {'OK' if p95 < 50 else 'FAIL'}"
    )
    print(
        f"training speed (median of 20-iteration intervals): app {app:.2f} it/s, "
        f"main.py train {cli:.2f} it/s, ratio {ratio:.2f}; goal >= 0.90: {'OK' if ratio >= 0.9 else 'FAIL'}"
    )
    print(f"whole runs, tests included (best): app {app_whole:.2f} it/s, main.py train {cli_whole:.2f} it/s")


if __name__ == "__main__":
    main()
