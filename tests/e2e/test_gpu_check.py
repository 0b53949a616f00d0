"""tools/gpu_check.sh, the one-call GPU check: here (no CUDA device) it says so and exits 2 before
running anything; its training stage's Trainer run works on the CPU side it compares against."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import backend

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gpu_train  # noqa: E402


@pytest.mark.skipif(backend.gpu_unavailable_reason() is None, reason="a GPU is here: run tools/gpu_check.sh")
def test_without_a_gpu_the_check_says_so_and_exits_2():
    env = {**os.environ, "PYTHON": sys.executable}
    done = subprocess.run(["bash", str(ROOT / "tools/gpu_check.sh")], capture_output=True, text=True, env=env)
    assert done.returncode == 2
    assert "no GPU to check" in done.stdout or "missing" in done.stdout
    assert "===" not in done.stdout  # no stage ran


def test_an_unknown_argument_is_one_line_and_exit_2():
    script = str(ROOT / "tools/gpu_check.sh")
    done = subprocess.run(["bash", script, "--frobnicate"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stdout.startswith("gpu_check: unknown argument --frobnicate (use --wheels DIR")
    assert len(done.stdout.strip().splitlines()) == 1


def test_the_training_stage_trains_lenet_through_the_trainer_on_the_cpu():
    backend.set_mode_cpu()
    start = gpu_train.create_solver(gpu_train.solver_param(), log_fn=lambda line: None)
    weights = [backend.to_host(blob.data).copy() for blob in start.net.learnable_params]
    finished, losses = gpu_train.train(False, weights)
    again = gpu_train.train(False, weights)[1]
    assert finished and len(losses) == 50
    assert losses[-1] < 0.5 * losses[0]  # one batch, learnt
    assert losses == again  # the same weights and batch: the same curve, as the GPU's is compared with
