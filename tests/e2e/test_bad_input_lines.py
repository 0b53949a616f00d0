"""#16 cases 6, 7 and 8 on the command line: every bad input below ends in exactly one line naming
the file at fault (the solverstate, the weights file, the prototxt, the image), exit code 2, and
nothing half-done: a solverstate is checked against the net before training starts; FIFOs and
devices given where a file is expected are refused at once; snapshots refuse planted symlinks; a
snapshot_prefix under /proc is refused up front. Run in process (main.main), as a user's shell would."""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import main as entry
from proto import binaryio

NET = """name: "tiny"
layer { name: "data" type: "DummyData" top: "x" top: "label"
  dummy_data_param { shape { dim: 4 dim: 3 } shape { dim: 4 }
    data_filler { type: "gaussian" } data_filler { type: "constant" value: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y"
  inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "y" bottom: "label" top: "loss" }
"""

GLOG = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +(\d+) ")


@pytest.fixture(autouse=True)
def _glog_undone():
    """main.main installs glog's handlers on the engine's loggers: take them off again, so later tests
    in this process see the logging they expect."""
    from engine.cli import glog

    saved = {
        name: (lg.handlers[:], lg.level, lg.propagate)
        for name in ("engine", "proto")
        for lg in [logging.getLogger(name)]
    }
    installed = glog._installed[:]
    yield
    for name, (handlers, level, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate
    glog._installed[:] = installed


def run(capsys, *argv: str) -> tuple[int, list[str]]:
    """main.py's exit code and its error lines (stderr's "error: ..." lines; on failure the last
    line of stderr must be the one error, no traceback after it)."""

    def hang(*_):
        raise TimeoutError(f"main.py {' '.join(argv)} hangs")

    previous = signal.signal(signal.SIGALRM, hang)  # train installs its own SIGINT handling: main thread
    signal.alarm(120)
    try:
        code = entry.main(list(argv))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    # glog lines a thread left by another test in this process prints meanwhile are not main.py's
    me = threading.get_native_id()
    err = [line for line in capsys.readouterr().err.splitlines() if _thread_of(line) in (None, me)]
    errors = [line for line in err if line.startswith("error")]
    if code:
        assert errors and err[-1] == errors[-1], err[-5:]
    return code, errors


def _thread_of(line: str) -> int | None:
    """The thread id of a glog line ("I1202 01:09:05.296734 30113 file.py:49] ..."), else None."""
    match = GLOG.match(line)
    return int(match.group(1)) if match else None


@pytest.fixture
def trained(tmp_path, capsys, monkeypatch) -> Path:
    """A folder with the net, a 4-iteration SGD solver (momentum: one history blob per param), and
    its snapshot at iteration 2."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "net.prototxt").write_text(NET)
    (tmp_path / "solver.prototxt").write_text(
        'net: "net.prototxt" base_lr: 0.1 momentum: 0.9 lr_policy: "fixed" max_iter: 4 '
        'snapshot: 2 snapshot_prefix: "snap" solver_mode: CPU\n'
    )
    code, lines = run(capsys, "train", "--solver", "solver.prototxt")
    assert code == 0, lines
    return tmp_path


def edited_state(folder: Path, name: str, change) -> str:
    state = binaryio.read_solverstate(str(folder / "snap_iter_2.solverstate"))
    change(state)
    binaryio.write_solverstate(str(folder / name), state)
    return name


def shape_5x5(state):
    state.history[0].shape.dim[:] = [5, 5]
    del state.history[0].data[25:]


STATES = {
    "count": (lambda s: s.history.pop(), "Incorrect length of history blobs (1 in the file, SGD keeps 2)"),
    "shape": (shape_5x5, "history blob 0 (of layer 'ip' param 0, shape (2, 3)) has shape (5, 5)"),
    "short": (lambda s: s.history[0].data.__delitem__(slice(2, None)), "holds 2 values for its 6"),
    "huge": (
        lambda s: s.history[1].shape.dim.__setitem__(slice(None), [2**40]),
        "has shape (1099511627776,)",
    ),
    "iter": (lambda s: setattr(s, "iter", -5), "iter is -5; it cannot be negative"),
    "zero": (
        lambda s: setattr(s, "learned_net", "/dev/zero"),
        "its learned_net /dev/zero: it is a character",
    ),
}


@pytest.mark.parametrize("kind", sorted(STATES))
def test_a_bad_solverstate_is_one_line_before_training(trained, capsys, kind):
    change, words = STATES[kind]
    name = edited_state(trained, f"{kind}.solverstate", change)
    (trained / "solver.prototxt").write_text((trained / "solver.prototxt").read_text().replace("4 ", "8 "))
    code, lines = run(capsys, "train", "--solver", "solver.prototxt", "--snapshot", name)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"error: {name}: ") and words in lines[0], lines[0]
    assert not (trained / "snap_iter_8.caffemodel").exists()  # nothing trained


def test_weight_errors_name_the_weights_file(trained, capsys):
    model = binaryio.read_caffemodel(str(trained / "snap_iter_2.caffemodel"))
    good = str(trained / "snap_iter_2.caffemodel")
    del [layer for layer in model.layer if layer.name == "ip"][0].blobs[0].data[3:]  # data short of its shape
    binaryio.write_caffemodel(str(trained / "short.caffemodel"), model)
    code, lines = run(capsys, "train", "--solver", "solver.prototxt", "--weights", f"{good},short.caffemodel")
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: short.caffemodel: "), lines
    assert "holds 3 values" in lines[0]
    code, lines = run(capsys, "test", "--model", "net.prototxt", "--weights", "short.caffemodel")
    assert code == 2 and lines[0].startswith("error: short.caffemodel: "), lines
    for flag in ("--weights", "--snapshot"):
        code, lines = run(capsys, "train", "--solver", "solver.prototxt", flag, "/dev/zero")
        assert (code, lines) == (
            2,
            [f"error: {flag} /dev/zero: it is a character device, not a regular file"],
        )


def test_net_errors_name_the_prototxt(trained, capsys):
    (trained / "bad.prototxt").write_text(NET.replace("num_output: 2", "num_output: 0"))
    (trained / "huge.prototxt").write_text(NET.replace("dim: 4 dim: 3", f"dim: {2**40} dim: 3"))
    for argv in (("time", "--model", "bad.prototxt"), ("fill", "--model", "bad.prototxt", "o.npz")):
        code, lines = run(capsys, *argv)
        assert code == 2 and lines == [
            "error: bad.prototxt: layer 'ip' (InnerProduct): num_output must be positive"
        ]
    code, lines = run(capsys, "time", "--model", "huge.prototxt")
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: huge.prototxt: layer 'data'"), lines
    assert "exceeds the limit" in lines[0]
    (trained / "solver.prototxt").write_text(
        (trained / "solver.prototxt").read_text().replace("net.p", "bad.p")
    )
    code, lines = run(capsys, "train", "--solver", "solver.prototxt")
    assert code == 2 and lines[-1].startswith("error: bad.prototxt: layer 'ip'"), lines


def test_fifos_and_devices_as_inputs_are_refused_at_once(trained, capsys):
    os.mkfifo(trained / "pipe")
    refusals = {
        ("time", "--model", "pipe"): "error: --model pipe: it is a FIFO (named pipe), not a regular file",
        ("train", "--solver", "pipe"): "error: --solver pipe: it is a FIFO (named pipe), not a regular file",
        ("splits", "pipe"): "error: pipe: it is a FIFO (named pipe), not a regular file",
        (
            "fill",
            "--model",
            "/dev/zero",
            "o.npz",
        ): "error: /dev/zero: it is a character device, not a regular file",
        ("draw", "pipe", "o.png"): "error: pipe: it is a FIFO (named pipe), not a regular file",
    }
    for argv, line in refusals.items():
        code, lines = run(capsys, *argv)
        assert (code, lines) == (2, [line]), argv
    assert (
        entry.main(["upgrade", "/dev/zero", "out.prototxt"]) == 2 and not (trained / "out.prototxt").exists()
    )
    assert capsys.readouterr().err == "/dev/zero: it is a character device, not a regular file\n"
    os.mkdir(trained / "folder")
    assert entry.main(["upgrade", "net.prototxt", "folder"]) == 2  # the user's path, not our temporary file
    assert capsys.readouterr().err == "folder: it is a folder, not a file\n"


def test_snapshots_refuse_a_planted_symlink_and_an_unwritable_prefix(trained, capsys):
    victim = trained / "victim.txt"
    victim.write_text("precious")
    (trained / "snap_iter_4.caffemodel").unlink()
    (trained / "snap_iter_4.caffemodel").symlink_to(victim)
    code, lines = run(capsys, "train", "--solver", "solver.prototxt")
    assert code == 2 and victim.read_text() == "precious", lines
    assert lines[
        -1
    ] == f"error: cannot write {trained / 'snap_iter_4.caffemodel'}: it is a symbolic link " + (
        f"(to {victim}); refusing to write through it"
    ) or lines[-1].startswith("error: cannot write snap_iter_4.caffemodel: it is a symbolic link"), lines
    text = (trained / "solver.prototxt").read_text().replace('"snap"', '"/proc/barista/snap"')
    (trained / "solver.prototxt").write_text(text)
    code, lines = run(capsys, "train", "--solver", "solver.prototxt")
    assert (
        code == 2 and len(lines) == 1 and "Cannot write to snapshot prefix '/proc/barista/snap'" in lines[0]
    )


def test_a_huge_label_and_a_decompression_bomb_name_their_files(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(tmp_path / "a.png")
    (tmp_path / "list.txt").write_text(f"a.png 1\na.png {2**70}\n")
    net = tmp_path / "images.prototxt"
    net.write_text(
        'layer { name: "d" type: "ImageData" top: "data" top: "label" '
        f'image_data_param {{ source: "{tmp_path / "list.txt"}" batch_size: 1 '
        f'root_folder: "{tmp_path}/" }} }}'
    )
    code, lines = run(capsys, "time", "--model", str(net), "--iterations", "1")
    assert code == 2 and len(lines) == 1 and f"{tmp_path / 'list.txt'}:2: the label" in lines[0], lines
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 4)  # a 4x4 image is now a bomb (over twice the limit)
    (tmp_path / "list.txt").write_text("a.png 1\n")
    code, lines = run(capsys, "time", "--model", str(net), "--iterations", "1")
    assert code == 2 and len(lines) == 1 and f"{tmp_path}/a.png: cannot decode the image" in lines[0], lines
    assert "decompression bomb" in lines[0]
