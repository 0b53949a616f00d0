"""main.py's headless subcommands, run as a user runs them: output, files written, exit codes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "resources" / "examples"


def main(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "main.py"), *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_splits_prints_the_net_caffe_builds():
    done = main("splits", str(EXAMPLES / "inception.prototxt"))
    assert done.returncode == 0, done.stderr
    assert re.search(r'name: "[^"]+_split"\s+type: "Split"', done.stdout)
    assert "state {\n  phase: TRAIN\n}" in done.stdout


def test_splits_phase_test_keeps_test_layers():
    train = main("splits", str(EXAMPLES / "mnist/lenet_train_test.prototxt"), "--phase", "TRAIN").stdout
    test = main("splits", str(EXAMPLES / "mnist/lenet_train_test.prototxt"), "--phase", "TEST").stdout
    assert 'type: "Accuracy"' not in train and 'type: "Accuracy"' in test
    assert 'name: "ip2_ip2_0_split"' in test  # ip2 feeds accuracy and loss


def test_upgrade_legacy_net(tmp_path):
    out = tmp_path / "lenet.prototxt"
    done = main("upgrade", str(EXAMPLES / "legacy/lenet_v1.prototxt"), str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "layers {" not in text and 'type: "Input"' in text and "lr_mult" in text


def test_fill_is_seeded_and_equals_for_equal_seeds(tmp_path):
    a, b, c = tmp_path / "a.npz", tmp_path / "b.npz", tmp_path / "c.npz"
    model = str(EXAMPLES / "mlp.prototxt")
    assert main("fill", "--model", model, str(a)).returncode == 0
    assert main("fill", "--model", model, str(b)).returncode == 0
    assert main("fill", "--model", model, "--seed", "2", str(c)).returncode == 0
    za, zb, zc = np.load(a), np.load(b), np.load(c)
    assert sorted(za.files) == ["hidden1/0", "hidden1/1", "hidden2/0", "hidden2/1", "scores/0", "scores/1"]
    assert za["hidden1/0"].shape == (64, 20)
    np.testing.assert_array_equal(za["hidden1/0"], zb["hidden1/0"])
    assert not np.array_equal(za["hidden1/0"], zc["hidden1/0"])


def test_time_reports_every_layer():
    done = main("time", "--model", str(EXAMPLES / "mnist/lenet.prototxt"), "--iterations", "2")
    assert done.returncode == 0, done.stderr
    for layer in ("conv1", "pool1", "ip2", "prob"):
        assert re.search(rf"^\s*{layer}\tforward: [\d.]+ ms\.$", done.stdout, re.M)
    assert "Average Forward-Backward:" in done.stdout


def test_device_query_names_the_backends():
    done = main("device_query")
    assert done.returncode == 0
    assert "CPU: numpy" in done.stdout and "GPU:" in done.stdout


@pytest.mark.slow
def test_train_then_test_from_the_command_line(tmp_path):
    shutil.copy(EXAMPLES / "mlp.prototxt", tmp_path)
    solver = (EXAMPLES / "mlp_solver.prototxt").read_text()
    solver = solver.replace("max_iter: 2000", "max_iter: 60").replace("snapshot: 1000", "snapshot: 30")
    (tmp_path / "solver.prototxt").write_text(solver)
    done = main("train", "--solver", "solver.prototxt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    losses = [float(m) for m in re.findall(r"Iteration \d+ \([\d.]+s\), loss = ([\d.e+-]+)", done.stdout)]
    assert len(losses) == 2  # display: 50 over 60 iterations: iterations 0 and 50
    assert re.search(r"Iteration 50, lr = 0\.05", done.stdout)
    assert "Optimization Done." in done.stdout
    assert (tmp_path / "mlp_iter_30.caffemodel").exists() and (tmp_path / "mlp_iter_60.solverstate").exists()
    scored = main(
        "test",
        "--model",
        "mlp.prototxt",
        "--weights",
        "mlp_iter_60.caffemodel",
        "--iterations",
        "3",
        cwd=tmp_path,
    )
    assert scored.returncode == 0, scored.stderr
    assert len(re.findall(r"Batch \d, loss = [\d.]+", scored.stdout)) == 3
    assert re.search(r"loss = [\d.]+ \(\* 1 = [\d.]+ loss\)", scored.stdout)
    resumed = main(
        "train", "--solver", "solver.prototxt", "--snapshot", "mlp_iter_30.solverstate", cwd=tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "Iteration 50, lr" in resumed.stdout and "Iteration 0," not in resumed.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["splits", "missing.prototxt"], "missing.prototxt"),
        (["splits", "{bad}"], r"bad\.prototxt:2:\d+"),
        (["test", "--model", "{net}", "--weights", "{net}", "--iterations", "1"], "net.prototxt"),
        (["train", "--solver", "{net}"], "net.prototxt"),
        (["fill", "--model", "{bogus_type}", "out.npz"], "Unknown layer type: 'Bogus'"),
    ],
    ids=["missing", "syntax", "text-as-caffemodel", "net-as-solver", "unknown-type"],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    (tmp_path / "bad.prototxt").write_text('layer {\n  nam: "x"\n}\n')
    (tmp_path / "net.prototxt").write_text((EXAMPLES / "mnist/lenet.prototxt").read_text())
    (tmp_path / "bogus.prototxt").write_text('layer { name: "x" type: "Bogus" top: "x" }\n')
    paths = {"bad": "bad.prototxt", "net": "net.prototxt", "bogus_type": "bogus.prototxt"}
    done = main(*[a.format(**paths) for a in args], cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert re.search(message, lines[0]), lines[0]


def test_gpu_flag_without_a_gpu_is_one_line_and_exit_2():
    from engine import backend

    if backend.gpu_available():
        pytest.skip("a GPU is usable here; the refusal path cannot be exercised")
    done = main("time", "--model", str(EXAMPLES / "mnist/lenet.prototxt"), "--iterations", "1", "--gpu")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "cupy" in done.stderr
