"""`--drop-unknown-fields`: a fork's prototxt is refused in one line listing each field, and read
without exactly those fields when asked (saying which), by every command that reads prototxt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

FORK = """name: "fork"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 dim: 9 dim: 9 } } }
layer { name: "pool1" type: "Pooling" bottom: "data" top: "pool1"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 ceil_mode: true } }
layer { name: "ip" type: "InnerProduct" bottom: "pool1" top: "ip"
  inner_product_param { num_output: 4 } fork_param { x: 1 } }
"""


def main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "main.py"), *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def test_refused_in_one_line_naming_each_field_then_read_without_them(tmp_path: Path):
    net = tmp_path / "fork.prototxt"
    net.write_text(FORK)
    refused = main("splits", str(net))
    assert refused.returncode == 2 and refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert f"{net}:4:54 pooling_param.ceil_mode (layer 'pool1')" in line
    assert f"{net}:6:41 fork_param (layer 'ip')" in line
    assert line.endswith("(--drop-unknown-fields reads it without them)")

    done = main("splits", str(net), "--drop-unknown-fields")
    assert done.returncode == 0, done.stderr
    assert "ceil_mode" not in done.stdout and "fork_param" not in done.stdout
    assert 'name: "ip"' in done.stdout and "kernel_size: 3" in done.stdout
    assert done.stderr.strip() == (
        f"warning: {net}: read without the fields BVLC Caffe's schema lacks: "
        "4:54 pooling_param.ceil_mode (layer 'pool1'), 6:41 fork_param (layer 'ip') (ceil_mode is BVLC's "
        "round_mode (ceil_mode: false = round_mode: FLOOR); without it pooling rounds up)"
    )


def test_caffe_commands_drop_them_too(tmp_path: Path):
    net = tmp_path / "fork.prototxt"
    net.write_text(FORK)
    timed = main("time", "--model", str(net), "--iterations", "1", "--drop-unknown-fields")
    assert timed.returncode == 0, timed.stderr
    assert "read without the fields" in timed.stderr and "Average Forward pass" in timed.stderr
    assert main("time", "--model", str(net), "--iterations", "1").returncode == 2
