"""The training package (`main.py export --solver S OUT_DIR`) trains LeNet as `main.py train` does.

From the same fixed weights (no shuffling, no random crops), one process logs the same
`Iteration N, loss = X` lines for 50 iterations (1e-4 relative) and the same test accuracy; two
processes under torchrun (gloo) train, their loss falls and their .caffemodel scores in `main.py
test`; a run stopped at a snapshot and resumed from its .solverstate continues the trajectory.

The rate is 0.003, not LeNet's 0.01: there, by iteration ~16 the float32 roundings of sums that
PyTorch and the engine order differently flip a near-tie (a max-pooling winner, a ReLU sign), and
SGD's momentum amplifies it to 1e-3 relative by iteration 40; at 0.003 every logged loss agrees to
the 6 printed digits.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from engine.export.package import export_package

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
SOLVER = """net: "lenet_train_test.prototxt"
test_iter: 2
test_interval: 25
base_lr: 0.003
momentum: 0.9
weight_decay: 0.0005
lr_policy: "inv"
gamma: 0.0001
power: 0.75
display: 1
max_iter: 50
snapshot_prefix: "lenet"
"""
LOSS = re.compile(r"Iteration (\d+)(?: \([^)]*\))?, loss = (\S+)")
ACCURACY = re.compile(r"Test net output #0: accuracy = (\S+)")
# The test net scores 2 batches of 100 images. Its logits are float32 sums that torch and numpy's BLAS
# add in different orders, so an image whose two best classes nearly tie may flip: one image of 200.
ONE_IMAGE = 1 / 200


def same_accuracies(log: str, other: str) -> bool:
    mine, theirs = ACCURACY.findall(log), ACCURACY.findall(other)
    return len(mine) == len(theirs) and all(
        abs(float(a) - float(b)) <= ONE_IMAGE + 1e-6 for a, b in zip(mine, theirs)
    )


ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}


def run(args: list[str], cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def losses(log: str) -> dict[int, float]:
    return {int(i): float(x) for i, x in LOSS.findall(log)}


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("lenet")
    shutil.copy(REPO / "resources/examples/mnist/lenet_train_test.prototxt", work)
    (work / "solver.prototxt").write_text(SOLVER)
    written = export_package(str(work / "solver.prototxt"), str(work / "package"))
    assert {"train.py", "model.py", "weights.pt", "caffe_pb2.py"} <= {Path(p).name for p in written}
    return work, work / "package"


@pytest.fixture(scope="module")
def one_process_log(package: tuple[Path, Path]) -> str:
    work, pkg = package
    return run([sys.executable, str(pkg / "train.py"), "--cpu"], work)


def test_one_process_logs_the_engines_losses_and_accuracy(
    package: tuple[Path, Path], one_process_log: str
) -> None:
    work, pkg = package
    # The engine from the very weights the package starts from: the export's fillers, as a caffemodel.
    first = pkg.parent / "start"
    first.mkdir(exist_ok=True)
    run([sys.executable, str(pkg / "train.py"), "--cpu", "--max-iter", "0"], first)
    engine_log = run(
        [
            sys.executable,
            str(REPO / "main.py"),
            "train",
            "--solver",
            "solver.prototxt",
            "--weights",
            str(first / "lenet_iter_0.caffemodel"),
        ],
        work,
    )
    mine, theirs = losses(one_process_log), losses(engine_log)
    assert sorted(mine) == sorted(theirs) == list(range(51))
    for i in range(51):
        assert mine[i] == pytest.approx(theirs[i], rel=1e-4), i
    assert mine[50] < mine[0] - 0.5  # it learned
    assert same_accuracies(one_process_log, engine_log), (ACCURACY.findall(one_process_log), engine_log)
    assert len(ACCURACY.findall(engine_log)) == 3  # iterations 0, 25 and 50


def test_a_resumed_run_continues_the_trajectory(package: tuple[Path, Path], one_process_log: str) -> None:
    work, pkg = package
    stop = pkg.parent / "stop"
    stop.mkdir(exist_ok=True)
    run([sys.executable, str(pkg / "train.py"), "--cpu", "--max-iter", "25"], stop)
    resumed = run(
        [sys.executable, str(pkg / "train.py"), "--cpu", "--snapshot", "lenet_iter_25.solverstate"], stop
    )
    assert "Restoring previous solver status from lenet_iter_25.solverstate" in resumed
    again, whole = losses(resumed), losses(one_process_log)
    assert min(again) == 25
    for i in range(25, 51):
        assert again[i] == pytest.approx(whole[i], rel=1e-6), i
    resumed_scores = ACCURACY.findall(resumed)
    whole_scores = ACCURACY.findall(one_process_log)[1:]
    assert len(resumed_scores) == len(whole_scores)
    for a, b in zip(resumed_scores, whole_scores):  # the same library both times: only threads differ
        assert float(a) == pytest.approx(float(b), abs=ONE_IMAGE + 1e-6)


def test_two_processes_under_torchrun_train_and_their_weights_score(package: tuple[Path, Path]) -> None:
    work, pkg = package
    two = pkg.parent / "two"
    two.mkdir(exist_ok=True)
    log = run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            str(pkg / "train.py"),
            "--cpu",
            "--max-iter",
            "30",
        ],
        two,
    )
    seen = losses(log)
    assert len(seen) == 31  # rank 0 alone logs
    assert sum(seen[i] for i in range(26, 31)) / 5 < seen[0] - 0.5
    scored = run(
        [
            sys.executable,
            str(REPO / "main.py"),
            "test",
            "--model",
            str(work / "lenet_train_test.prototxt"),
            "--weights",
            str(two / "lenet_iter_30.caffemodel"),
            "--iterations",
            "2",
        ],
        work,
    )
    accuracy = float(re.findall(r"\] accuracy = (\S+)", scored)[-1])
    assert accuracy > 0.5, scored[-800:]
