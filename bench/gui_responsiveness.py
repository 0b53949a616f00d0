"""The app while it trains: how late a 10 ms GUI timer fires, and training speed against `main.py train`.

    python -m bench.gui_responsiveness [--iters 300] [--solver S.prototxt] [--gpu] [--repeat 1]

Trains the same solver twice: headless with `main.py train` in a subprocess, then in the app
(Train in the main window, the dock showing its live curves). While the app trains, a 10 ms
QTimer records when it fires; its delay is the gap between two firings beyond 10 ms. Speed is
iterations per second between the log lines "Iteration 0" and "Optimization Done." in both
(test phases included in both). Prints the 95th-percentile delay (goal < 50 ms) and the ratio
app / CLI (goal >= 0.90). The solver is a copy with max_iter = --iters and no snapshots.
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


def prepare(solver: Path, iters: int, folder: Path) -> Path:
    """A copy of the solver's folder with max_iter = iters and no snapshots."""
    shutil.copytree(solver.parent, folder, dirs_exist_ok=True)
    path = folder / solver.name
    text = path.read_text()
    text = re.sub(r"(?m)^\s*(max_iter|snapshot|snapshot_after_train)\s*:.*$", "", text)
    path.write_text(text + f"\nmax_iter: {iters}\nsnapshot: 0\nsnapshot_after_train: false\n")
    return path


def span(lines: list[tuple[float, str]]) -> float:
    """Seconds from the first "Iteration 0" line to "Optimization Done."."""
    start = next(t for t, line in lines if re.match(r"Iteration 0\b", line.strip()))
    end = next(t for t, line in lines if line.strip() == "Optimization Done.")
    return end - start


def train_cli(solver: Path, gpu: bool, env: dict[str, str]) -> float:
    """Iterations per second of `main.py train` on ``solver``."""
    command = [
        sys.executable,
        str(REPO / "main.py"),
        "train",
        "--solver",
        str(solver),
        *(["--gpu"] if gpu else []),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=solver.parent, check=False)
    if done.returncode != 0:
        raise SystemExit(f"main.py train failed:\n{done.stderr[-2000:]}")
    lines = []
    for raw in (done.stdout + done.stderr).splitlines():
        m = GLOG.match(raw)
        if m:
            t = datetime.strptime(m.group(2), "%H:%M:%S.%f")
            lines.append((t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6, m.group(3)))
    return iterations(solver) / span(lines)


def iterations(solver: Path) -> int:
    return int(re.search(r"(?m)^max_iter: (\d+)", solver.read_text()).group(1))


def train_app(solver: Path, gpu: bool) -> tuple[float, np.ndarray]:
    """(iterations per second, timer delays in ms) of a run started with Train in the app."""
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
    timer = QTimer(
        interval=10, timerType=Qt.TimerType.PreciseTimer, timeout=lambda: ticks.append(time.perf_counter())
    )
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
    run = controller.current
    if run.status != "finished":
        raise SystemExit(f"the app's run ended {run.status}: {run.error}")
    window.close()
    delays = (np.diff(ticks) - 0.010) * 1e3
    return iterations(solver) / span(run.log), delays


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--solver", type=Path, default=LENET)
    parser.add_argument("--iters", type=int, default=300)
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each; the best speed of each counts")
    args = parser.parse_args(argv)
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(REPO))
    from engine.data import mnist, paths

    env = dict(os.environ)
    if paths.data_root() is None:  # the app finds the bundled MNIST by itself; tell the CLI where it is
        env[paths.ENV_VAR] = str(mnist.ensure_mnist())
    with tempfile.TemporaryDirectory(prefix="barista-bench-") as tmp:
        solver = prepare(args.solver.resolve(), args.iters, Path(tmp))
        cli = max(train_cli(solver, args.gpu, env) for _ in range(args.repeat))
        results = [train_app(solver, args.gpu) for _ in range(args.repeat)]
    app_speed = max(speed for speed, _ in results)
    delays = np.concatenate([d for _, d in results])
    p95 = float(np.percentile(delays, 95))
    where = "GPU" if args.gpu else "CPU"
    print(f"{args.solver.name}, {args.iters} iterations, {where}")
    print(
        f"GUI timer (10 ms) while training: p95 delay {p95:.1f} ms, p50 {np.percentile(delays, 50):.1f} ms, "
        f"max {delays.max():.1f} ms over {len(delays)} ticks (goal: p95 < 50 ms) "
        f"{'OK' if p95 < 50 else 'FAIL'}"
    )
    ratio = app_speed / cli
    print(
        f"training speed: app {app_speed:.2f} it/s, main.py train {cli:.2f} it/s, ratio {ratio:.2f} "
        f"(goal: >= 0.90) {'OK' if ratio >= 0.9 else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
