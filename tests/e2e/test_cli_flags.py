"""The pieces of the `caffe` commands that need no subprocess: GPU ids, stages, glog lines, the
device report, and main.py's reading of gflags-style command lines."""

from __future__ import annotations

import re

import pytest

import main as entry
from engine.cli import common, device_query, glog
from engine.cli.common import CliError


@pytest.fixture
def four_gpus(monkeypatch):
    monkeypatch.setattr(common, "device_count", lambda: 4)


def test_gpu_ids(four_gpus):
    assert common.parse_gpus("") == [] and common.parse_gpus(None) == []
    assert common.parse_gpus("2") == [2]
    assert common.parse_gpus("0,3") == [0, 3]
    assert common.parse_gpus("all") == [0, 1, 2, 3]
    with pytest.raises(CliError, match="there is no GPU 4 \\(this machine has 4\\)"):
        common.parse_gpus("1,4")
    for bad in ("x", "1,,2", "-1", "0;1"):
        with pytest.raises(CliError, match="is not a device id"):
            common.parse_gpus(bad)


def test_single_gpu_functions_drop_the_rest_naming_each():
    said: list[str] = []
    assert common.use_single_gpu([2, 0, 1], said.append) == [2]
    assert said == ["Not using GPU #1 for single-GPU function", "Not using GPU #0 for single-GPU function"]


def test_stages_split_on_commas_as_caffe_does():
    assert common.stages_from_flags(None) == [""]  # Caffe splits the empty flag into one empty stage
    assert common.stages_from_flags(["a,b"]) == ["a", "b"]
    assert common.stages_from_flags(["a", "b,c"]) == ["a", "b", "c"]


def test_net_for_adds_stages_and_replaces_phase_and_level(tmp_path):
    path = tmp_path / "net.prototxt"
    path.write_text('name: "n"\nstate { phase: TRAIN level: 4 stage: "own" }\n')
    param = common.net_for(str(path), 1, 2, ["x", "y"])
    assert param.state.phase == 1 and param.state.level == 2
    assert list(param.state.stage) == ["own", "x", "y"]


def test_glog_line_layout():
    text = glog.line("Iteration 5, lr = 0.01", source="sgd_solver.cpp:106")
    m = re.fullmatch(
        r"I(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) ([ \d]{5,}) sgd_solver\.cpp:106\] (.*)", text
    )
    assert m and m.group(8) == "Iteration 5, lr = 0.01"
    assert 1 <= int(m.group(1)) <= 12 and 1 <= int(m.group(2)) <= 31
    assert text.split()[8] == "0.01"  # parse_log.sh's awk '{print $9}'


@pytest.mark.parametrize(
    ("message", "source"),
    [
        ("Iteration 100, lr = 0.01", "sgd_solver.cpp"),
        ("Iteration 100 (3.1 iter/s, 32s/100 iters), loss = 0.2", "solver.cpp"),
        ("    Train net output #0: loss = 0.2 (* 1 = 0.2 loss)", "solver.cpp"),
        ("Iteration 500, Testing net (#0)", "solver.cpp"),
        ("Snapshotting solver state to binary proto file x_iter_5.solverstate", "sgd_solver.cpp"),
        ("Snapshotting to binary proto file x_iter_5.caffemodel", "solver.cpp"),
    ],
)
def test_solver_lines_come_from_caffe_sources(message, source):
    assert re.fullmatch(rf"{re.escape(source)}:\d+", glog.solver_source(message))
    assert glog.solver_source(message) != f"{source}:0"


def test_device_report_uses_caffe_labels():
    props = {
        "major": 9,
        "minor": 0,
        "name": "Some GPU",
        "totalGlobalMem": 1024,
        "maxThreadsDim": (1024, 1024, 64),
        "deviceOverlap": 1,
        "kernelExecTimeoutEnabled": 0,
    }
    lines = device_query.caffe_report(3, props)
    assert lines[0] == "Device id:                     3"
    assert "Name:                          Some GPU" in lines
    assert "Total global memory:           1024" in lines
    assert "Maximum dimension of block:    1024, 1024, 64" in lines
    assert "Concurrent copy and execution: Yes" in lines
    assert lines[-1] == "Kernel execution timeout:      No"
    assert all(len(line.split(":")[0]) + 1 <= 31 and line[30] == " " for line in lines)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--solver=s", "train"], ["train", "--solver=s"]),
        (["-solver", "s", "train", "-gpu", "0"], ["train", "-solver", "s", "-gpu", "0"]),
        (["--model", "test", "test"], ["test", "--model", "test"]),  # a flag's value is not the command
        (["train", "--solver", "s"], ["train", "--solver", "s"]),
        (["--help"], ["--help"]),
    ],
)
def test_command_word_may_follow_the_flags(argv, expected):
    assert entry._command_first(argv) == expected


def test_every_caffe_command_takes_every_caffe_flag():
    parser = entry._parser()
    for command in entry.CAFFE_COMMANDS:
        args = parser.parse_args(
            [command, "-solver=s", "-model", "m", "-weights", "w", "-gpu", "-iterations", "3"]
        )
        assert (args.solver, args.model, args.weights, args.gpu, args.iterations) == ("s", "m", "w", "0", 3)
        defaults = parser.parse_args([command])
        assert defaults.iterations == 50 and defaults.level == 0 and defaults.gpu == ""
        assert (defaults.sigint_effect, defaults.sighup_effect) == ("stop", "snapshot")
