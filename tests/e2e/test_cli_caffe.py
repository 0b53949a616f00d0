"""`main.py train | test | time` run as `caffe` is run, their logs read as Caffe's own log tools read them.

The parser below repeats, in our own words, what tools/extra/parse_log.py (Caffe 1.0) does: rows of
train and test outputs keyed by iteration, the learning rate carried from the last "lr =" line, the
seconds since the "Solving" line from glog's timestamps; and what parse_log.sh's awk reads (the 9th
field of a ", lr = " line, the 11th of a "Test net output #K" line). Expected numbers come from the
solver settings (lr policy) or from a numpy reference on weights the test writes itself.
"""

from __future__ import annotations

import datetime
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from proto import binaryio, caffe_pb2

REPO = Path(__file__).resolve().parents[2]

GLOG = re.compile(r"^([IWEF])(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) +(\d+) ([\w.]+):(\d+)\] (.*)$")
RE_ITERATION = re.compile(r"Iteration (\d+)")
RE_TRAIN_OUTPUT = re.compile(r"Train net output #(\d+): (\S+) = ([\.\deE+-]+)")
RE_TEST_OUTPUT = re.compile(r"Test net output #(\d+): (\S+) = ([\.\deE+-]+)")
RE_LR = re.compile(r"lr = ([-+]?[0-9]*\.?[0-9]+([eE]?[-+]?[0-9]+)?)")
NUMBER = r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)"

TINY_NET = """name: "tiny"
layer { name: "data" type: "DummyData" top: "data" top: "label"
  dummy_data_param { shape { dim: 4 dim: 3 } shape { dim: 4 }
    data_filler { type: "constant" value: 1 } data_filler { type: "constant" value: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "accuracy" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy"
  include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""

TINY_SOLVER = """net: "net.prototxt"
test_iter: 2
test_interval: 5
base_lr: 0.5
lr_policy: "step"
gamma: 0.5
stepsize: 4
display: 2
max_iter: 10
snapshot: 5
snapshot_prefix: "snaps/tiny"
solver_mode: CPU
random_seed: 3
"""


def short_solver() -> str:
    """Two iterations, each displayed and tested, so parse_log gets more than one row of each."""
    replaced = {
        "max_iter: 10": "max_iter: 2",
        "display: 2": "display: 1",
        "test_interval: 5": "test_interval: 1",
    }
    text = TINY_SOLVER
    for old, new in replaced.items():
        text = text.replace(old, new)
    return text


def caffe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "main.py"), *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def glog_time(line: str, year: int) -> datetime.datetime:
    """extract_seconds.py's reading of a glog prefix (the year is not in the line)."""
    m = GLOG.match(line)
    if not m:
        raise ValueError(line)
    month, day, hour, minute, second, micro = (int(g) for g in m.groups()[1:7])
    return datetime.datetime(year, month, day, hour, minute, second, micro)


def parse_log(text: str) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """Caffe 1.0's parse_log.py, rewritten: (train rows, test rows)."""
    year = datetime.datetime.now().year
    lines = iter(text.splitlines())
    start = next(glog_time(line, year) for line in lines if "Solving" in line)
    iteration, rate = -1.0, math.nan
    tables: dict[str, list[dict[str, float]]] = {"train": [], "test": []}
    open_rows: dict[str, dict[str, float] | None] = {"train": None, "test": None}
    for line in lines:
        m = RE_ITERATION.search(line)
        if m:
            iteration = float(m.group(1))
        if iteration == -1:
            continue
        try:
            seconds = (glog_time(line, year) - start).total_seconds()
        except ValueError:  # a bare continuation line of a multi-line message
            continue
        m = RE_LR.search(line)
        if m:
            rate = float(m.group(1))
        for kind, regex in (("train", RE_TRAIN_OUTPUT), ("test", RE_TEST_OUTPUT)):
            rows, row = tables[kind], open_rows[kind]
            out = regex.search(line)
            if out:
                if row is None or row["NumIters"] != iteration:
                    if row is not None:
                        rows.append(row)
                    row = {"NumIters": iteration, "Seconds": seconds, "LearningRate": rate}
                row[out.group(2)] = float(out.group(3))
            if row is not None and rows and len(row) == len(rows[0]):
                rows.append(row)
                row = None
            open_rows[kind] = row
    for rows in tables.values():
        if len(rows) > 1 and math.isnan(rows[0]["LearningRate"]):
            rows[0]["LearningRate"] = rows[1]["LearningRate"]
    return tables["train"], tables["test"]


def messages(stderr: str) -> list[str]:
    """The message part of every glog line."""
    return [m.group(11) for m in map(GLOG.match, stderr.splitlines()) if m]


def softmax_loss(w: np.ndarray, b: np.ndarray, x: np.ndarray, label: int) -> float:
    logits = w.astype(np.float64) @ x + b
    return float(np.log(np.exp(logits - logits.max()).sum()) + logits.max() - logits[label])


def write_ip_weights(path: Path, w: np.ndarray, b: np.ndarray, name: str = "ip") -> None:
    net = caffe_pb2.NetParameter(name="weights")
    layer = net.layer.add(name=name, type="InnerProduct")
    for array in (w, b):
        blob = layer.blobs.add()
        blob.shape.dim.extend(array.shape)
        blob.data.extend(array.astype(np.float32).ravel().tolist())
    binaryio.write_caffemodel(str(path), net)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One tiny training run, shared by the tests that read its log and its snapshots."""
    folder = tmp_path_factory.mktemp("train")
    (folder / "net.prototxt").write_text(TINY_NET)
    (folder / "solver.prototxt").write_text(TINY_SOLVER)
    (folder / "snaps").mkdir()
    return folder, caffe("train", "--solver", "solver.prototxt", cwd=folder)


def test_train_logs_to_stderr_in_glog_format(trained):
    _, done = trained
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    # as glog: every line carries the prefix, but for the later lines of a multi-line message
    bare = [i for i, line in enumerate(lines) if not GLOG.match(line)]
    for i in bare:
        head = max(j for j in range(i) if GLOG.match(lines[j]))
        assert lines[head].endswith("Initializing solver from parameters: "), lines[i]
    # parse_log.sh's awk: the value is the 9th field of a ", lr = " line, the 11th of a test output line
    lr_lines = [line for line in lines if ", lr = " in line]
    assert [line.split()[8] for line in lr_lines] == ["0.5", "0.5", "0.25", "0.25", "0.125"]
    test0 = [line for line in lines if "Test net output #0" in line]
    assert len(test0) == 3 and all(re.fullmatch(NUMBER, line.split()[10]) for line in test0)
    order = [m for m in messages(done.stderr) if m.startswith(("Solving", "Starting", "Optimization"))]
    assert order == ["Starting Optimization", "Solving tiny", "Optimization Done.", "Optimization Done."]
    assert re.search(
        r" solver\.cpp:\d+\] Optimization Done\.\n.* caffe\.cpp:\d+\] Optimization Done\.$", done.stderr
    )


def test_train_log_reads_as_parse_log_reads_it(trained):
    _, done = trained
    train, test = parse_log(done.stderr)
    assert [row["NumIters"] for row in train] == [0, 2, 4, 6, 8]
    # a row's rate is the last "lr =" line before it (parse_log's lag), the first back-filled
    assert [row["LearningRate"] for row in train] == [0.5, 0.5, 0.5, 0.25, 0.25]
    losses = [row["loss"] for row in train]
    assert all(0 < v < 5 for v in losses) and losses[-1] < losses[0]
    assert [row["NumIters"] for row in test] == [0, 5, 10]
    assert all(set(row) == {"NumIters", "Seconds", "LearningRate", "accuracy", "loss"} for row in test)
    assert test[-1]["loss"] < test[0]["loss"]
    seconds = [row["Seconds"] for row in train + test]
    assert all(s >= 0 for s in seconds)


def test_train_lines_follow_caffe_formats(trained):
    _, done = trained
    said = messages(done.stderr)
    display = [
        re.fullmatch(rf"Iteration (\d+) \(({NUMBER}) iter/s, ({NUMBER})s/2 iters\), loss = ({NUMBER})", m)
        for m in said
    ]
    shown = [m for m in display if m]
    assert [int(m.group(1)) for m in shown] == [0, 2, 4, 6, 8]
    outputs = [
        re.fullmatch(rf"    Train net output #0: loss = ({NUMBER}) \(\* 1 = ({NUMBER}) loss\)", m)
        for m in said
    ]
    outputs = [m for m in outputs if m]
    # average_loss 1: the smoothed loss is the iteration's loss, and the weighted loss equals it (weight 1)
    assert [m.group(4) for m in shown] == [m.group(1) for m in outputs]
    assert all(m.group(1) == m.group(2) for m in outputs)
    assert [m for m in said if re.fullmatch(r"Iteration \d+, Testing net \(#0\)", m)] == [
        "Iteration 0, Testing net (#0)",
        "Iteration 5, Testing net (#0)",
        "Iteration 10, Testing net (#0)",
    ]
    assert any(re.fullmatch(rf"    Test net output #0: accuracy = {NUMBER}", m) for m in said)
    assert any(
        re.fullmatch(rf"    Test net output #1: loss = {NUMBER} \(\* 1 = {NUMBER} loss\)", m) for m in said
    )
    assert re.fullmatch(
        rf"Iteration 10, loss = {NUMBER}", said[said.index("Iteration 10, Testing net (#0)") - 1]
    )


def test_train_snapshots_at_the_interval(trained):
    folder, done = trained
    said = messages(done.stderr)
    for n in (5, 10):
        assert f"Snapshotting to binary proto file snaps/tiny_iter_{n}.caffemodel" in said
        assert f"Snapshotting solver state to binary proto file snaps/tiny_iter_{n}.solverstate" in said
        state = binaryio.read_solverstate(folder / "snaps" / f"tiny_iter_{n}.solverstate")
        assert state.iter == n and state.learned_net.endswith(f"tiny_iter_{n}.caffemodel")
    assert sorted(p.name for p in (folder / "snaps").iterdir()) == [
        "tiny_iter_10.caffemodel",
        "tiny_iter_10.solverstate",
        "tiny_iter_5.caffemodel",
        "tiny_iter_5.solverstate",
    ]


def test_resume_from_a_snapshot(trained, tmp_path):
    folder, _ = trained
    done = caffe(
        "train", "--solver", "solver.prototxt", "--snapshot", "snaps/tiny_iter_5.solverstate", cwd=folder
    )
    assert done.returncode == 0, done.stderr
    said = messages(done.stderr)
    assert said.index("Resuming from snaps/tiny_iter_5.solverstate") < said.index("Starting Optimization")
    iterations = [int(m.group(1)) for m in map(RE_ITERATION.search, said) if m]
    assert iterations[0] == 5 and iterations[-1] == 10
    train, _ = parse_log(done.stderr)
    assert [row["NumIters"] for row in train] == [6, 8]
    assert [line.split()[8] for line in done.stderr.splitlines() if ", lr = " in line] == ["0.25", "0.125"]


def test_weights_list_is_copied_in_turn_into_train_and_test_nets(tmp_path):
    (tmp_path / "net.prototxt").write_text(TINY_NET)
    solver = short_solver()
    # The flag replaces the solver's own `weights` (here a file that does not exist), as caffe.cpp does.
    (tmp_path / "solver.prototxt").write_text(
        solver + 'snapshot_after_train: false\nweights: "gone.caffemodel"\n'
    )
    (tmp_path / "snaps").mkdir()
    wa = np.array([[0.5, -0.25, 1.0], [0.125, 0.75, -0.5]], np.float32)
    wb = np.array([[-1.0, 0.5, 0.25], [1.5, 0.0, 0.5]], np.float32)
    ba, bb = np.array([0.1, -0.2], np.float32), np.array([0.3, 0.4], np.float32)
    write_ip_weights(tmp_path / "a.caffemodel", wa, ba)
    write_ip_weights(tmp_path / "b.caffemodel", wb, bb)
    write_ip_weights(tmp_path / "other.caffemodel", wb, bb, name="elsewhere")
    x = np.ones(3)
    for weights, (w, b) in (
        ("a.caffemodel,b.caffemodel", (wb, bb)),
        ("b.caffemodel,a.caffemodel,other.caffemodel", (wa, ba)),
    ):
        done = caffe("train", "--solver", "solver.prototxt", "--weights", weights, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        said = messages(done.stderr)
        assert [m for m in said if m.startswith("Finetuning from ")] == [
            f"Finetuning from {p}" for p in weights.split(",")
        ]
        expected = softmax_loss(w, b, x, 1)
        _, test = parse_log(done.stderr)
        assert test[0]["NumIters"] == 0 and test[0]["loss"] == pytest.approx(expected, rel=2e-5)
        train_loss = next(float(m.group(3)) for m in map(RE_TRAIN_OUTPUT.search, said) if m)
        assert train_loss == pytest.approx(expected, rel=2e-5)
    assert "Ignoring source layer elsewhere" in said


SCORE_NET = """name: "score"
layer { name: "data" type: "DummyData" top: "data" top: "label"
  dummy_data_param { shape { dim: 2 dim: 3 } shape { dim: 2 }
    data_filler { type: "constant" value: 1 } data_filler { type: "constant" value: 0 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" loss_weight: 2 }
layer { name: "shift" type: "Power" bottom: "ip" top: "shifted" power_param { shift: 1 } }
layer { name: "extra" type: "Power" bottom: "ip" top: "staged" include { stage: "extra" } }
layer { name: "deep" type: "Power" bottom: "ip" top: "tall" include { min_level: 2 } }
layer { name: "trainonly" type: "Power" bottom: "ip" top: "trained" include { phase: TRAIN } }
"""


def test_test_prints_every_batch_then_the_means(tmp_path):
    (tmp_path / "net.prototxt").write_text(SCORE_NET)
    w = np.array([[0.5, -0.25, 1.0], [0.125, 0.75, -0.5]], np.float32)
    b = np.array([0.1, -0.2], np.float32)
    write_ip_weights(tmp_path / "w.caffemodel", w, b)
    done = caffe(
        "test", "--model", "net.prototxt", "--weights", "w.caffemodel", "--iterations", "3", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    said = messages(done.stderr)
    assert said[:2] == ["Use CPU.", "Running for 3 iterations."]
    loss = softmax_loss(w, b, np.ones(3), 0)
    logits = w.astype(np.float64) @ np.ones(3) + b
    batch = [m for m in said if m.startswith("Batch ")]
    assert len(batch) == 3 * (1 + 4)  # per batch: loss (1 element) and shifted (2 x 2 elements)
    for k in range(3):
        rows = [re.fullmatch(rf"Batch {k}, (\w+) = ({NUMBER})", m) for m in batch[5 * k : 5 * k + 5]]
        assert all(rows)
        assert [r.group(1) for r in rows] == ["loss"] + ["shifted"] * 4
        assert float(rows[0].group(2)) == pytest.approx(loss, rel=2e-5)
        values = [float(r.group(2)) for r in rows[1:]]
        np.testing.assert_allclose(values, np.tile(logits + 1, 2), rtol=2e-5)
    tail = said[said.index(next(m for m in said if m.startswith("Loss: "))) :]
    assert float(tail[0].split()[1]) == pytest.approx(2 * loss, rel=2e-5)  # the net's loss carries the weight
    m = re.fullmatch(rf"loss = ({NUMBER}) \(\* 2 = ({NUMBER}) loss\)", tail[1])
    assert m and float(m.group(1)) == pytest.approx(loss, rel=2e-5)
    assert float(m.group(2)) == pytest.approx(2 * loss, rel=2e-5)
    means = [re.fullmatch(rf"shifted = ({NUMBER})", t) for t in tail[2:]]
    assert len(means) == 4 and all(means)
    np.testing.assert_allclose([float(x.group(1)) for x in means], np.tile(logits + 1, 2), rtol=2e-5)
    assert all(g == f"{float(g):g}" for g in re.findall(rf"= ({NUMBER})", "\n".join(said)))  # %g, 6 digits


def test_test_stage_and_level_select_layers(tmp_path):
    (tmp_path / "net.prototxt").write_text(SCORE_NET)
    write_ip_weights(tmp_path / "w.caffemodel", np.zeros((2, 3), np.float32), np.zeros(2, np.float32))
    base = ("test", "--model", "net.prototxt", "--weights", "w.caffemodel", "--iterations", "1")

    def outputs(*flags: str) -> set[str]:
        done = caffe(*base, *flags, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return {m.group(1) for m in map(re.compile(r"^Batch 0, (\w+) = ").match, messages(done.stderr)) if m}

    assert outputs() == {"loss", "shifted"}
    assert outputs("--stage", "extra") == {"loss", "shifted", "staged"}
    assert outputs("-stage=other,extra", "-level=2") == {"loss", "shifted", "staged", "tall"}
    assert outputs("--stage", "other", "--stage", "extra") == {"loss", "shifted", "staged"}
    assert outputs("--level", "1") == {"loss", "shifted"}


def test_train_stage_and_level_reach_the_train_net_only(tmp_path):
    (tmp_path / "net.prototxt").write_text(SCORE_NET)
    solver = short_solver()
    # Caffe sets train_state.level from --level (0 by default), whatever the solver file says
    (tmp_path / "solver.prototxt").write_text(
        solver + "snapshot_after_train: false\ntrain_state { level: 5 }\n"
    )
    (tmp_path / "snaps").mkdir()
    done = caffe("train", "--solver", "solver.prototxt", "--stage", "extra", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    train, test = parse_log(done.stderr)
    assert set(train[0]) - {"NumIters", "Seconds", "LearningRate"} == {"loss", "shifted", "staged", "trained"}
    assert set(test[0]) - {"NumIters", "Seconds", "LearningRate"} == {"loss", "shifted"}
    done = caffe("train", "--solver", "solver.prototxt", "--level", "3", cwd=tmp_path)
    train, _ = parse_log(done.stderr)
    assert "tall" in train[0] and "staged" not in train[0]


def test_time_reports_caffe_benchmark_lines(tmp_path):
    (tmp_path / "net.prototxt").write_text(SCORE_NET)
    done = caffe("time", "--model", "net.prototxt", "--iterations", "3", "--phase", "TEST", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = messages(done.stderr)
    start = said.index("*** Benchmark begins ***")
    assert said[:start] == ["Use CPU.", "Performing Forward", said[2], "Performing Backward"]
    assert re.fullmatch(rf"Initial loss: {NUMBER}", said[2])
    assert said[start + 1] == "Testing for 3 iterations."
    for k in (1, 2, 3):
        assert re.fullmatch(rf"Iteration: {k} forward-backward time: {NUMBER} ms\.", said[start + 1 + k])
    assert said[start + 5] == "Average time per layer: "
    layers = ["data", "ip", "ip_ip_0_split", "loss", "shift"]  # TEST phase: no 'trainonly'
    per_layer = said[start + 6 : start + 6 + 2 * len(layers)]
    for i, name in enumerate(layers):
        assert re.fullmatch(rf" *{name}\tforward: {NUMBER} ms\.", per_layer[2 * i])
        assert re.fullmatch(rf" *{name}\tbackward: {NUMBER} ms\.", per_layer[2 * i + 1])
        assert len(per_layer[2 * i].split("\t")[0]) == max(10, len(name))  # setw(10)
    rest = said[start + 6 + 2 * len(layers) :]
    labels = ["Average Forward pass", "Average Backward pass", "Average Forward-Backward", "Total Time"]
    for label, message in zip(labels, rest):
        assert re.fullmatch(rf"{label}: {NUMBER} ms\.", message)
    assert rest[4:] == ["*** Benchmark ends ***"]


def test_time_runs_backward_on_a_net_without_loss(tmp_path):
    deploy = "\n".join(line for line in SCORE_NET.splitlines() if '"loss"' not in line)
    (tmp_path / "deploy.prototxt").write_text(deploy)
    done = caffe("time", "-model", "deploy.prototxt", "-iterations", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = messages(done.stderr)
    assert "Initial loss: 0" in said
    assert any(re.fullmatch(rf"\s*trainonly\tbackward: {NUMBER} ms\.", m) for m in said)  # TRAIN by default


def test_outputs_are_listed_by_name_as_caffe_lists_them(tmp_path):
    """Net::Init collects the outputs from a std::set: by name, whatever the order of creation."""
    net = SCORE_NET.replace('top: "shifted"', 'top: "alpha"').replace(
        '"loss" loss_weight', '"zeta" loss_weight'
    )
    (tmp_path / "net.prototxt").write_text(net.replace('top: "loss"', 'top: "zeta"'))
    write_ip_weights(tmp_path / "w.caffemodel", np.zeros((2, 3), np.float32), np.zeros(2, np.float32))
    done = caffe(
        "test", "--model", "net.prototxt", "--weights", "w.caffemodel", "--iterations", "1", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    names = [m.group(1) for m in map(re.compile(r"^Batch 0, (\w+) = ").match, messages(done.stderr)) if m]
    assert names == ["alpha"] * 4 + ["zeta"]
