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
    for layer in ("conv1", "pool1", "ip2", "prob"):  # logged, as glog logs, on stderr
        assert re.search(rf"\] \s*{layer}\tforward: [\d.e+-]+ ms\.$", done.stderr, re.M)
    assert "Average Forward-Backward:" in done.stderr and done.stdout == ""


def test_device_query_names_the_backends():
    done = main("device_query")
    assert done.returncode == 0
    assert "CPU: numpy" in done.stdout and "GPU:" in done.stdout
    assert re.search(r"^I\d{4} .* caffe\.cpp:\d+\] Querying GPUs $", done.stderr, re.M)


def test_train_then_test_from_the_command_line(tmp_path):
    shutil.copy(EXAMPLES / "mlp.prototxt", tmp_path)
    solver = (EXAMPLES / "mlp_solver.prototxt").read_text()
    solver = solver.replace("max_iter: 2000", "max_iter: 60").replace("snapshot: 1000", "snapshot: 30")
    (tmp_path / "solver.prototxt").write_text(solver)
    done = main("train", "--solver", "solver.prototxt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    log = done.stderr
    losses = [float(m) for m in re.findall(r"Iteration \d+ \(.*\), loss = ([\d.e+-]+)", log)]
    assert len(losses) == 2  # display: 50 over 60 iterations: iterations 0 and 50
    assert re.search(r"Iteration 50, lr = 0\.05", log)
    assert "Optimization Done." in log
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
    assert len(re.findall(r"Batch \d, loss = [\d.]+", scored.stderr)) == 3
    assert re.search(r"loss = [\d.]+ \(\* 1 = [\d.]+ loss\)", scored.stderr)
    resumed = main(
        "train", "--solver", "solver.prototxt", "--snapshot", "mlp_iter_30.solverstate", cwd=tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "Iteration 50, lr" in resumed.stderr and "Iteration 0," not in resumed.stderr


SOLVER = """net: "net.prototxt"
base_lr: 0.01
lr_policy: "fixed"
max_iter: 1
snapshot_prefix: "{prefix}"
solver_mode: CPU
"""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["splits", "missing.prototxt"], "missing.prototxt"),
        (["splits", "{bad}"], r"bad\.prototxt:2:\d+"),
        (["test", "--model", "{net}", "--weights", "{net}", "--iterations", "1"], "net.prototxt"),
        (["train", "--solver", "{net}"], "net.prototxt"),
        (["fill", "--model", "{bogus_type}", "out.npz"], "Unknown layer type: 'Bogus'"),
        (["train"], "^error: Need a solver definition to train\\.$"),
        (["train", "--solver", "missing.prototxt"], "--solver missing.prototxt: no such file"),
        (
            ["train", "-solver", "{solver}", "-weights", "w.caffemodel", "-snapshot", "s.solverstate"],
            "not both",
        ),
        (
            ["train", "--solver", "{solver}", "--weights", "{weights},gone.caffemodel"],
            "--weights gone.caffemodel",
        ),
        (["train", "--solver", "{solver}", "--weights", "{net}"], "net.prototxt"),
        (["train", "--solver", "{solver}", "--snapshot", "gone.solverstate"], "--snapshot gone.solverstate"),
        (["train", "--solver", "{solver}", "--gpu", "x"], "'x' is not a device id"),
        (["train", "--solver", "{solver}", "--gpu=-1"], "'-1' is not a device id"),
        (["train", "--solver", "{solver}", "--bogus"], "unrecognized arguments: --bogus"),
        (["train", "--solver", "{solver}", "--sigint_effect", "kill"], 'Invalid signal effect "kill"'),
        (["train", "--solver", "{solver}", "--level", "x"], "invalid int value: 'x'"),
        (["train", "--solver", "{no_net}"], r"net .absent.prototxt. not found: tried .*absent.prototxt"),
        (["train", "--solver", "{bad_prefix}"], "Cannot write to snapshot prefix 'nowhere/snap'"),
        (["test", "--model", "{net}"], "Need model weights to score"),
        (["test", "--weights", "{weights}"], "Need a model definition to score"),
        (["test", "--model", "gone.prototxt", "--weights", "{weights}"], "--model gone.prototxt"),
        (["test", "--model", "{net}", "--weights", "{weights}", "--iterations", "0"], "--iterations"),
        (["time"], "Need a model definition to time"),
        (["time", "--model", "{net}", "--phase", "VAL"], 'phase must be "TRAIN" or "TEST"'),
        (["frobnicate"], "'frobnicate' is neither a command \\(.*train.*\\) nor a file"),
    ],
    ids=[
        "missing",
        "syntax",
        "text-as-caffemodel",
        "net-as-solver",
        "unknown-type",
        "no-solver",
        "missing-solver",
        "weights-and-snapshot",
        "missing-weights-in-list",
        "text-weights-for-train",
        "missing-snapshot",
        "gpu-not-a-number",
        "gpu-negative",
        "unknown-flag",
        "bad-signal-effect",
        "bad-level",
        "solver-net-missing",
        "snapshot-folder-missing",
        "test-without-weights",
        "test-without-model",
        "test-missing-model",
        "test-zero-iterations",
        "time-without-model",
        "time-bad-phase",
        "unknown-command",
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    from proto import binaryio, caffe_pb2

    (tmp_path / "bad.prototxt").write_text('layer {\n  nam: "x"\n}\n')
    (tmp_path / "net.prototxt").write_text((EXAMPLES / "mnist/lenet.prototxt").read_text())
    (tmp_path / "bogus.prototxt").write_text('layer { name: "x" type: "Bogus" top: "x" }\n')
    (tmp_path / "solver.prototxt").write_text(SOLVER.format(prefix="snap"))
    (tmp_path / "no_net.prototxt").write_text(
        SOLVER.format(prefix="snap").replace("net.prototxt", "absent.prototxt")
    )
    (tmp_path / "bad_prefix.prototxt").write_text(SOLVER.format(prefix="nowhere/snap"))
    binaryio.write_caffemodel(str(tmp_path / "w.caffemodel"), caffe_pb2.NetParameter(name="empty"))
    paths = {
        "bad": "bad.prototxt",
        "net": "net.prototxt",
        "bogus_type": "bogus.prototxt",
        "solver": "solver.prototxt",
        "no_net": "no_net.prototxt",
        "bad_prefix": "bad_prefix.prototxt",
        "weights": "w.caffemodel",
    }
    done = main(*[a.format(**paths) for a in args], cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in done.stderr
    assert re.search(message, lines[0]), lines[0]


def test_caffe_flag_spellings(tmp_path):
    """gflags reads -flag, --flag, -flag=V and --flag=V, before or after the command word."""
    (tmp_path / "net.prototxt").write_text((EXAMPLES / "mlp.prototxt").read_text())
    spellings = [
        ["time", "-model", "net.prototxt", "-iterations", "1"],
        ["time", "--model=net.prototxt", "-iterations=1"],
        ["-model=net.prototxt", "time", "--iterations", "1"],
        ["--model", "net.prototxt", "-iterations", "1", "time"],
    ]
    for argv in spellings:
        done = main(*argv, cwd=tmp_path)
        assert done.returncode == 0, (argv, done.stderr)
        assert re.search(r"\] Testing for 1 iterations\.$", done.stderr, re.M), argv


def test_solver_mode_gpu_without_a_gpu_trains_on_the_cpu(tmp_path):
    from engine import backend

    if backend.gpu_available():
        pytest.skip("a GPU is usable here; the solver's GPU mode would be honoured")
    (tmp_path / "net.prototxt").write_text((EXAMPLES / "mlp.prototxt").read_text())
    solver = SOLVER.format(prefix="snap").replace("solver_mode: CPU", "solver_mode: GPU\ndevice_id: 0")
    (tmp_path / "solver.prototxt").write_text(solver + "snapshot_after_train: false\n")
    done = main("train", "--solver", "solver.prototxt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.search(
        r"^W\d{4} .*\] The solver asks for GPU 0 \(solver_mode: GPU\) but .*; using the CPU\.$",
        done.stderr,
        re.M,
    )
    assert re.search(r"\] Use CPU\.$", done.stderr, re.M)
    assert done.stderr.rstrip().endswith("Optimization Done.")


def test_gpu_flag_without_a_gpu_is_one_line_and_exit_2():
    from engine import backend

    if backend.gpu_available():
        pytest.skip("a GPU is usable here; the refusal path cannot be exercised")
    done = main("time", "--model", str(EXAMPLES / "mnist/lenet.prototxt"), "--iterations", "1", "--gpu")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "cupy" in done.stderr


def test_time_runs_layers_in_the_training_steps_thread_scope(monkeypatch):
    """`time` measures layers as a training step runs them: inside parallel.gemms_in_pool."""
    from google.protobuf import text_format

    from engine import parallel
    from engine.cli.time import benchmark
    from engine.net import Net
    from proto import caffe_pb2

    text = """
    layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 } } }
    layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 4 } }
    """
    net = Net(text_format.Parse(text, caffe_pb2.NetParameter()), phase=caffe_pb2.TRAIN)
    seen: list[int] = []
    layer = net.layers[1]
    forward = layer.forward
    monkeypatch.setattr(layer, "forward", lambda b, t: (seen.append(parallel._split_gemms), forward(b, t)))
    benchmark(net, 2, say=lambda line: None)
    assert seen and all(depth > 0 for depth in seen)
