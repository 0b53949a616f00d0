"""Issue 30 case 11: two trainings with the same snapshot_prefix at once. Caffe lets both write
PREFIX_iter_N (an iteration's caffemodel from one run, its solverstate from the other); here the
second refuses in one line naming the first, through the engine's solver (CLI and app alike)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format

from engine.errors import EngineError
from engine.solvers import create_solver
from proto import caffe_pb2

REPO = Path(__file__).resolve().parents[2]
NET = """name: "tiny"
layer { name: "data" type: "DummyData" top: "x" top: "label"
  dummy_data_param { shape { dim: 4 dim: 3 } shape { dim: 4 }
    data_filler { type: "gaussian" } data_filler { type: "constant" value: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y"
  inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "y" bottom: "label" top: "loss" }
"""


def solver(folder: Path, max_iter: int = 2, prefix: str = "snap/run"):
    param = text_format.Parse(
        f'base_lr: 0.01 lr_policy: "fixed" max_iter: {max_iter} snapshot_prefix: "{prefix}"',
        caffe_pb2.SolverParameter(),
    )
    param.net_param.CopyFrom(text_format.Parse(NET, caffe_pb2.NetParameter()))
    return create_solver(param, base_dir=folder, log_fn=lambda message: None)


def test_a_second_run_with_the_same_prefix_is_refused_naming_the_first(tmp_path):
    (tmp_path / "snap").mkdir()
    first, second = solver(tmp_path), solver(tmp_path)
    with first.prefix_lock:  # the first run is training
        lock = tmp_path / "snap" / "run.lock"
        assert lock.read_text().startswith(f"pid {os.getpid()}, started ")
        with pytest.raises(EngineError) as caught:
            second.solve()
        message = str(caught.value)
        assert message.startswith(f"another training (pid {os.getpid()}, started ")
        assert message.endswith(f"(it holds {lock}); wait for it to end or change snapshot_prefix")
        assert second.iter == 0 and not list((tmp_path / "snap").glob("run_iter_*"))
        assert lock.exists()  # the refused run leaves the holder's lock alone
    assert not lock.exists()
    second.solve()  # the first has ended: the prefix is free
    assert sorted(p.name for p in (tmp_path / "snap").iterdir()) == [
        "run_iter_2.caffemodel",
        "run_iter_2.solverstate",
    ]


def test_a_lock_left_by_a_killed_run_is_taken_over(tmp_path):
    """The pid in the file is gone (no process holds the flock): the next run trains."""
    (tmp_path / "snap").mkdir()
    (tmp_path / "snap" / "run.lock").write_text("pid 999999999, started 2020-01-01 00:00:00\n")
    run = solver(tmp_path)
    run.solve()
    assert run.iter == 2 and not (tmp_path / "snap" / "run.lock").exists()


def test_other_prefixes_train_side_by_side(tmp_path):
    (tmp_path / "snap").mkdir()
    first, other = solver(tmp_path), solver(tmp_path, prefix="snap/other")
    with first.prefix_lock:
        other.solve()
    assert (tmp_path / "snap" / "other_iter_2.caffemodel").exists()


def test_the_command_line_refuses_in_one_line_while_another_process_trains(tmp_path):
    (tmp_path / "net.prototxt").write_text(NET)
    (tmp_path / "solver.prototxt").write_text(
        'net: "net.prototxt" base_lr: 0.01 lr_policy: "fixed" max_iter: 2 snapshot_prefix: "run"'
    )
    holder = subprocess.Popen(  # another process holding the lock, as a long training would
        [
            sys.executable,
            "-c",
            "import sys; from engine.solvers.prefix_lock import PrefixLock\n"
            "with PrefixLock('run.lock'):\n    print('held', flush=True); sys.stdin.read()",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        done = subprocess.run(
            [sys.executable, str(REPO / "main.py"), "train", "--solver", "solver.prototxt"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = done.stderr.splitlines()
        errors = [line for line in lines if line.startswith(("error", "Traceback", "E", "F"))]
        assert done.returncode == 2 and lines[-1] == errors[-1]  # the last line: no traceback after it
        assert errors == [
            f"error: another training (pid {holder.pid}, started {_started(tmp_path)}) is writing snapshots "
            "with this prefix (it holds run.lock); wait for it to end or change snapshot_prefix"
        ]
        assert not list(tmp_path.glob("run_iter_*"))
    finally:
        holder.communicate("", timeout=60)
    assert not (tmp_path / "run.lock").exists()


def _started(folder: Path) -> str:
    return (folder / "run.lock").read_text().strip().split("started ", 1)[1]


def test_the_apps_trainer_reports_the_refusal_as_its_failure(tmp_path):
    """The window's training worker runs engine.trainer.Trainer: the second run fails with the line."""
    from engine.events import Failed
    from engine.trainer import Trainer

    (tmp_path / "snap").mkdir()
    first = solver(tmp_path)
    events: list[object] = []
    with first.prefix_lock:
        assert not Trainer(lambda: solver(tmp_path), events.append).run()
    failed = [e for e in events if isinstance(e, Failed)]
    assert (
        len(failed) == 1 and "another training" in failed[0].message and "snap/run.lock" in failed[0].message
    )
