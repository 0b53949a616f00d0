"""Caffe's own file conventions from the command line: BVLC's solvers name their net, data and
snapshot prefix from the Caffe root (``net: "examples/cifar10/..."``), so a solver run from anywhere
finds them in the folders above it, says where, and a path found nowhere is one line naming every
place tried (never a raw ``[Errno 2]``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import lmdb
import numpy as np

from proto import caffe_pb2

REPO = Path(__file__).resolve().parents[2]

NET = """name: "tiny"
layer { name: "data" type: "Data" top: "data" top: "label"
  transform_param { scale: 0.00390625 }
  data_param { source: "examples/tiny/tiny_lmdb" batch_size: 4 backend: LMDB } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""

SOLVER = """net: "examples/tiny/tiny_train_test.prototxt"
base_lr: 0.01
lr_policy: "fixed"
max_iter: 2
snapshot: 2
snapshot_prefix: "examples/tiny/tiny"
solver_mode: CPU
"""


def _caffe_root(root: Path) -> Path:
    """``root/caffe/examples/tiny``: a solver, its net and an LMDB, named as BVLC names them."""
    folder = root / "caffe" / "examples" / "tiny"
    folder.mkdir(parents=True)
    (folder / "tiny_solver.prototxt").write_text(SOLVER)
    (folder / "tiny_train_test.prototxt").write_text(NET)
    env = lmdb.open(str(folder / "tiny_lmdb"), map_size=1 << 22)
    pixels = np.random.default_rng(0).integers(0, 256, (8, 1, 3, 3)).astype(np.uint8)
    with env.begin(write=True) as txn:
        for i, image in enumerate(pixels):
            datum = caffe_pb2.Datum(channels=1, height=3, width=3, data=image.tobytes(), label=i % 2)
            txn.put(b"%08d" % i, datum.SerializeToString())
    env.close()
    return folder / "tiny_solver.prototxt"


def _main(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "main.py"), *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_a_bvlc_style_solver_trains_from_anywhere_and_says_where_it_found_things(tmp_path):
    solver = _caffe_root(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = _main("train", "--solver", str(solver), cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    root = tmp_path / "caffe"
    net = "net examples/tiny/tiny_train_test.prototxt"
    assert f"{net}: found under {root} (2 folders above tiny_solver.prototxt)" in done.stderr
    assert f"snapshot_prefix folder examples/tiny: found under {root}" in done.stderr
    assert "Optimization Done." in done.stderr
    assert (root / "examples" / "tiny" / "tiny_iter_2.caffemodel").exists()  # where Caffe would write it
    assert list(elsewhere.iterdir()) == []


def test_run_from_the_caffe_root_it_is_caffes_own_rule(tmp_path):
    solver = _caffe_root(tmp_path)
    done = _main("train", "--solver", str(solver), cwd=tmp_path / "caffe")
    assert done.returncode == 0, done.stderr
    assert "found under" not in done.stderr  # the working directory had it, as for Caffe


def test_a_net_found_nowhere_is_one_line_naming_what_was_tried(tmp_path):
    solver = _caffe_root(tmp_path)
    solver.write_text(SOLVER.replace("tiny_train_test", "missing"))
    done = _main("train", "--solver", str(solver), cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {solver}: net 'examples/tiny/missing.prototxt' not found: tried ")
    assert str(solver.parent / "examples/tiny/missing.prototxt") in line
    assert "Errno" not in line and "each folder above it" in line


def test_shapes_finds_a_relative_source_from_the_caffe_root(tmp_path):
    solver = _caffe_root(tmp_path)
    net = solver.parent / "tiny_train_test.prototxt"
    done = _main("shapes", str(net), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "4x1x3x3,4" in done.stdout and "*" not in done.stdout  # read from the LMDB, not assumed
