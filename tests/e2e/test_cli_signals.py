"""`main.py train` under SIGINT and SIGHUP, as `caffe train` with --sigint_effect / --sighup_effect.

Caffe's defaults: SIGINT stops (after the current iteration; the solver then snapshots because
snapshot_after_train is on, logs "Optimization stopped early.", and caffe.cpp still logs
"Optimization Done." and exits 0); SIGHUP snapshots and goes on; 'none' swallows the signal.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.cli.common import CliError
from engine.cli.signals import SignalHandler

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")

NET = """name: "tiny"
layer { name: "data" type: "DummyData" top: "data" top: "label"
  dummy_data_param { shape { dim: 2 dim: 3 } shape { dim: 2 }
    data_filler { type: "constant" value: 1 } data_filler { type: "constant" value: 0 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""
SOLVER = """net: "net.prototxt"
base_lr: 0.01
lr_policy: "fixed"
display: 50
max_iter: 100000000
snapshot_prefix: "snaps/tiny"
solver_mode: CPU
"""
GLOG_MESSAGE = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ [\w.]+:\d+\] (.*)$")


def train_with_signals(folder: Path, plan: list[tuple[int, int]], *flags: str) -> tuple[int, list[str]]:
    """Run `train`; once the display line of iteration N is logged, send the paired signal."""
    (folder / "net.prototxt").write_text(NET)
    (folder / "solver.prototxt").write_text(SOLVER)
    (folder / "snaps").mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "main.py"), "train", "--solver", "solver.prototxt", *flags],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(60, proc.kill)  # a run that ignores its stop must not hang the suite
    watchdog.start()
    said: list[str] = []
    pending = list(plan)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            m = GLOG_MESSAGE.match(line.rstrip("\n"))
            if not m:
                continue
            said.append(m.group(1))
            if pending and said[-1].startswith(f"Iteration {pending[0][0]} ("):
                proc.send_signal(pending.pop(0)[1])
        code = proc.wait(timeout=60)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
    return code, said


def snapshots_taken(said: list[str]) -> list[int]:
    pattern = re.compile(r"Snapshotting to binary proto file snaps/tiny_iter_(\d+)\.caffemodel")
    return [int(m.group(1)) for m in map(pattern.fullmatch, said) if m]


def test_sigint_stops_with_a_snapshot_and_exit_0(tmp_path):
    code, said = train_with_signals(tmp_path, [(100, signal.SIGINT)])
    assert code == 0
    assert said[-2:] == ["Optimization stopped early.", "Optimization Done."]
    (stopped,) = snapshots_taken(said)  # snapshot_after_train, at the iteration it stopped after
    assert stopped > 100
    assert (tmp_path / "snaps" / f"tiny_iter_{stopped}.caffemodel").exists()
    assert (tmp_path / "snaps" / f"tiny_iter_{stopped}.solverstate").exists()


def test_sighup_snapshots_and_goes_on(tmp_path):
    code, said = train_with_signals(tmp_path, [(100, signal.SIGHUP), (300, signal.SIGINT)])
    assert code == 0
    first, last = snapshots_taken(said)
    assert 100 < first < 300 < last
    displayed = [int(m.group(1)) for m in map(re.compile(r"Iteration (\d+) \(").match, said) if m]
    assert max(displayed) >= 300  # it went on after the snapshot
    assert said[-2:] == ["Optimization stopped early.", "Optimization Done."]


def test_effects_are_configurable(tmp_path):
    flags = ("--sigint_effect", "none", "--sighup_effect", "stop")
    code, said = train_with_signals(tmp_path, [(100, signal.SIGINT), (300, signal.SIGHUP)], *flags)
    assert code == 0
    (stopped,) = snapshots_taken(said)
    assert stopped > 300  # SIGINT at 100 was swallowed
    assert said[-2:] == ["Optimization stopped early.", "Optimization Done."]


def test_sigint_effect_snapshot(tmp_path):
    flags = ("-sigint_effect=snapshot", "-sighup_effect=stop")
    code, said = train_with_signals(tmp_path, [(100, signal.SIGINT), (300, signal.SIGHUP)], *flags)
    assert code == 0
    first, last = snapshots_taken(said)
    assert 100 < first < 300 < last


def test_handler_answers_sighup_first_and_each_signal_once():
    # What was installed before (a shell's background job inherits SIGINT ignored, not Python's handler).
    before = signal.getsignal(signal.SIGINT)
    with SignalHandler("stop", "snapshot") as handler:
        assert handler.action() is None
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGHUP)
        assert handler.action() == "snapshot"
        assert handler.action() == "stop"
        assert handler.action() is None
    assert signal.getsignal(signal.SIGINT) is before  # put back


def test_handler_none_swallows_the_signal():
    with SignalHandler("none", "none") as handler:
        os.kill(os.getpid(), signal.SIGINT)
        assert handler.action() is None
        assert handler.action() is None


def test_handler_refuses_an_unknown_effect():
    with pytest.raises(CliError, match='invalid signal effect "kill"'):
        SignalHandler("kill", "snapshot")
