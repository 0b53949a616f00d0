"""Ctrl-C during `main.py compare-init` stops it as it stops `train`: after the current iteration, with
the table, the verdicts (each on the iterations it reached) and --out written from what ran, exit 0.
A second Ctrl-C ends it at once (KeyboardInterrupt: main.py exits 130)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.cli.signals import SignalHandler

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")

NET = """name: "tiny"
layer { name: "data" type: "DummyData" top: "data" top: "label"
  dummy_data_param { shape { dim: 4 dim: 8 } shape { dim: 4 }
    data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1" inner_product_param { num_output: 6 } }
layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2" inner_product_param { num_output: 3 } }
layer { name: "accuracy" type: "Accuracy" bottom: "ip2" bottom: "label" top: "accuracy"
  include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
"""
SOLVER = """net: "net.prototxt"
test_iter: 1
test_interval: 5
base_lr: 0.1
lr_policy: "fixed"
max_iter: 1000
solver_mode: CPU
"""
PLANNED = 100_000_000  # never reached: only the signal ends the run


def compare_until_first_progress(folder: Path) -> tuple[int, list[str], str]:
    """Start compare-init; at its first progress line send SIGINT; its exit code, stdout and stderr."""
    (folder / "net.prototxt").write_text(NET)
    (folder / "solver.prototxt").write_text(SOLVER)
    args = ["--variant", "xavier", "--variant", "zero=constant 0", "--iterations", str(PLANNED)]
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "main.py"), "compare-init", "--solver", "solver.prototxt", *args,
         "--test-interval", "5", "--out", "curves.json"],
        cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    watchdog = threading.Timer(90, proc.kill)  # a run that ignores its stop must not hang the suite
    watchdog.start()
    said: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            said.append(line.rstrip("\n"))
            if len(said) == 1 and line.startswith("Iteration "):
                proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=90)
        assert proc.stderr is not None
        err = proc.stderr.read()
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
    return code, said, err


def test_ctrl_c_stops_after_the_iteration_and_reports_what_ran(tmp_path):
    code, said, err = compare_until_first_progress(tmp_path)
    assert code == 0, err
    assert said[0].startswith("Iteration 0 | xavier:")  # the signal came with the first line
    stop = next(i for i, line in enumerate(said) if line.startswith("Optimization stopped early"))
    reached = int(said[stop].split("at iteration ")[1].split(" of")[0])
    assert 0 < reached < PLANNED and said[stop].endswith(f"of {PLANNED}.")
    assert said[stop + 1].startswith("variant") and said[stop + 2].split()[0] == "xavier"
    assert said[stop + 3].split()[0] == "zero"
    verdicts = [line for line in said if line.startswith(("xavier: ", "zero: ")) and "stopped at" in line]
    assert len(verdicts) == 2 and all(f"of {PLANNED})" in v for v in verdicts)
    assert said[-1] == "wrote curves.json"

    doc = json.loads((tmp_path / "curves.json").read_text())
    assert doc["iterations"] == PLANNED and doc["stopped_at"] == reached
    # A stop in a test round may interrupt the later variants' test before their iteration: one fewer.
    ran = [v["iters"] for v in doc["variants"]]
    assert len(ran[0]) == reached and reached - 1 <= len(ran[1]) <= reached
    assert all(it == list(range(len(it))) for it in ran)
    assert all(len(v["loss"]) == len(v["iters"]) and v["tests"][0]["iter"] == 0 for v in doc["variants"])
    for variant, line in zip(doc["variants"], verdicts):
        assert line.endswith(variant["verdict"]) and f"stopped at iteration {len(variant['iters'])}" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curves.json", "net.prototxt", "solver.prototxt"]


def test_the_first_sigint_asks_for_a_stop_and_a_second_aborts():
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGHUP)
    with SignalHandler("stop", None, repeat_aborts=True) as handler:
        os.kill(os.getpid(), signal.SIGINT)
        assert handler.action() == "stop" and handler.action() is None  # answered once
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**6):  # the handler runs at the next bytecode, in this (the main) thread
                pass
        assert signal.getsignal(signal.SIGHUP) is before[1]  # left alone: nothing to snapshot
    assert signal.getsignal(signal.SIGINT) is before[0]  # given back
