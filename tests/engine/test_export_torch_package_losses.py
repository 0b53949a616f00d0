"""A training package whose net ends in HingeLoss (an MLP fed by HDF5Data) trains as `main.py train`
does: one process logs the engine's `Iteration N, loss = X` values (1e-4 relative) from the same start,
the loss falls, and the test net (HingeLoss and Accuracy) reports the engine's scores."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

pytest.importorskip("torch")

import torch

from engine.cli.train import read_solver
from engine.export.package import export_package
from engine.solvers import create_solver

pytestmark = pytest.mark.slow
FILLERS = 'weight_filler { type: "xavier" } bias_filler { type: "constant" }'
NET = f"""name: "HingeMLP"
layer {{ name: "data" type: "HDF5Data" top: "data" top: "label"
        hdf5_data_param {{ source: "LIST" batch_size: 12 }} }}
layer {{ name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
        inner_product_param {{ num_output: 8 {FILLERS} }} }}
layer {{ name: "relu" type: "ReLU" bottom: "ip1" top: "ip1" }}
layer {{ name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
        inner_product_param {{ num_output: 3 {FILLERS} }} }}
layer {{ name: "loss" type: "HingeLoss" bottom: "ip2" bottom: "label" top: "loss" loss_weight: 0.5
        hinge_loss_param {{ norm: L2 }} }}
layer {{ name: "accuracy" type: "Accuracy" bottom: "ip2" bottom: "label" top: "accuracy"
        include {{ phase: TEST }} }}
"""
SOLVER = """net: "net.prototxt"
base_lr: 0.02
momentum: 0.9
weight_decay: 0.001
lr_policy: "fixed"
display: 1
max_iter: 20
test_iter: 2
test_interval: 10
random_seed: 7
snapshot_prefix: "hinge"
"""
LOSS = re.compile(r"Iteration (\d+)(?: \([^)]*\))?, loss = (\S+)")
SCORE = re.compile(r"Test net output #(\d+): (\w+) = (\S+)")


def data_set(folder: Path) -> Path:
    """Three separable clusters in 6 dimensions, 48 samples, labels 0..2 (in order, no shuffling)."""
    draw = np.random.default_rng(5)
    label = np.arange(48) % 3
    centres = draw.standard_normal((3, 6))
    data = (centres[label] + draw.standard_normal((48, 6)) * 0.8).astype(np.float32)
    with h5py.File(folder / "train.h5", "w") as f:
        f["data"], f["label"] = data, label.astype(np.float32)
    (folder / "list.txt").write_text(str(folder / "train.h5") + "\n")
    return folder / "list.txt"


def test_a_hinge_loss_package_trains_as_the_engine_does(tmp_path: Path) -> None:
    listing = data_set(tmp_path)
    (tmp_path / "net.prototxt").write_text(NET.replace("LIST", str(listing)))
    (tmp_path / "solver.prototxt").write_text(SOLVER)
    export_package(str(tmp_path / "solver.prototxt"), str(tmp_path / "package"))
    assert "class HingeLoss(nn.Module):" in (tmp_path / "package" / "model.py").read_text()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(tmp_path / "package" / "train.py"), "--cpu"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    mine = {int(i): float(x) for i, x in LOSS.findall(done.stderr)}

    # The engine, from the weights the package started from (the same seeded fillers; checked).
    engine_log: list[str] = []
    param = read_solver(str(tmp_path / "solver.prototxt"))
    param.snapshot_prefix = str(tmp_path / "engine_hinge")
    solver = create_solver(param, log_fn=engine_log.append)
    try:
        start = torch.load(tmp_path / "package" / "weights.pt", weights_only=True)
        for name in ("ip1", "ip2"):
            for blob, key in zip(solver.net.layer_by_name(name).blobs, ("weight", "bias")):
                np.testing.assert_array_equal(np.asarray(blob.data), start[f"{name}.{key}"].numpy())
        solver.solve()
    finally:
        solver.close()
    theirs = {int(i): float(x) for i, x in LOSS.findall("\n".join(engine_log))}
    assert sorted(mine) == sorted(theirs) == list(range(21))
    for i in sorted(theirs):
        assert mine[i] == pytest.approx(theirs[i], rel=1e-4), (i, mine, theirs)
    assert mine[19] < 0.5 * mine[0]  # it learned
    # The scores are printed to 4-6 significant digits from sums that torch and numpy's BLAS add in
    # different orders (float32): compare the values, to the training losses' 1e-4, never the digits.
    scores = SCORE.findall(done.stderr)
    engine_scores = SCORE.findall("\n".join(engine_log))
    assert scores and [s[:2] for s in scores] == [s[:2] for s in engine_scores]
    for (_, name, value), (_, _, expected) in zip(scores, engine_scores):
        assert float(value) == pytest.approx(float(expected), rel=1e-4, abs=1e-6), (
            name,
            scores,
            engine_scores,
        )
    assert {name for _, name, _ in scores} == {"accuracy", "loss"}
