"""#16 case 6, the layout sidecar: whatever NET.prototxt.layout.json holds (NaN, Infinity, 1e308 or
400-digit positions, 100,000-deep nesting, not JSON, a FIFO), reading it never fails: a bad position
is absent (that box is laid out automatically), the good ones are kept, and `draw` still draws."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import main
from graph_view import sidecar

NET = Path(__file__).resolve().parents[2] / "resources" / "examples" / "mlp.prototxt"

BAD = ["NaN", "Infinity", "-Infinity", "1e308", "9" * 400, '"12"', "true", "null", "[1, 2]"]


@pytest.mark.parametrize("value", BAD)
def test_a_bad_position_is_absent_and_the_others_stay(tmp_path, value):
    net = tmp_path / "net.prototxt"
    Path(sidecar.path_for(net)).write_text(
        f'{{"version": 1, "direction": "down", '
        f'"positions": {{"hidden1": [{value}, 10], "hidden2": [5.5, -7]}}, "expanded": ["hidden2", 3]}}'
    )
    state = sidecar.load(net)
    assert state is not None and state.positions == {"hidden2": (5.5, -7.0)}
    assert state.downward and state.expanded == {"hidden2"}


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"positions": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "[]",
        "{{{",
        "\x00",
    ],
)
def test_a_file_that_cannot_be_read_means_automatic_layout(tmp_path, text):
    net = tmp_path / "net.prototxt"
    Path(sidecar.path_for(net)).write_text(text)
    state = sidecar.load(net)
    assert state is None or state.positions == {}


def test_a_fifo_sidecar_is_not_waited_on(tmp_path):
    net = tmp_path / "net.prototxt"
    os.mkfifo(sidecar.path_for(net))
    assert sidecar.load(net) is None


@pytest.mark.parametrize("value", ["NaN", "1e308", "9" * 400])
def test_draw_draws_with_a_bad_sidecar(tmp_path, value):
    net = tmp_path / "mlp.prototxt"
    net.write_text(NET.read_text())
    Path(sidecar.path_for(net)).write_text(
        f'{{"positions": {{"hidden1": [{value}, 0], "scores": [300, 900]}}}}'
    )
    out = tmp_path / "out.png"
    assert main.main(["draw", str(net), str(out)]) == 0
    assert out.stat().st_size > 1000
