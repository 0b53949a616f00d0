"""`main.py compare-init`: a run on LeNet/MNIST prints progress, a table and verdicts and writes its
curves; bad input is one line and exit code 2."""

from __future__ import annotations

import csv
import json

import pytest

import main
from engine.data import mnist, paths
from tests.engine.compare_init_support import LENET_SOLVER, mnist_root  # noqa: F401  (a fixture)


@pytest.fixture
def bundled(monkeypatch, mnist_root):  # noqa: F811
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.setattr(mnist, "default_folder", lambda: mnist_root)


def compare(*extra: str) -> int:
    return main.main(["compare-init", "--solver", str(LENET_SOLVER), *extra])


def test_a_run_prints_progress_a_table_and_verdicts_and_writes_json(bundled, tmp_path, capsys):
    out = tmp_path / "results.json"
    args = ("--variant", "zero=constant 0", "--variant", "xavier", "--iterations", "4", "--test-iter", "1")
    assert compare(*args, "--test-interval", "2", "--out", str(out)) == 0
    printed = capsys.readouterr().out.splitlines()
    progress = [line for line in printed if line.startswith("Iteration ")]
    assert [line.split(" |")[0] for line in progress] == ["Iteration 0", "Iteration 2", "Iteration 4"]
    assert "zero: loss" in progress[1] and "xavier: loss" in progress[1] and "accuracy" in progress[1]
    header = next(i for i, line in enumerate(printed) if line.startswith("variant"))
    assert printed[header + 1].split()[:3] == ["zero", "constant", "value=0"]
    assert printed[header + 2].split()[:2] == ["xavier", "xavier"]
    assert printed[header + 3].startswith("zero: did not learn: loss flat at 2.30")
    assert printed[header + 4].startswith("xavier: ")
    doc = json.loads(out.read_text())
    assert [v["name"] for v in doc["variants"]] == ["zero", "xavier"]
    assert doc["variants"][1]["iters"] == [0, 1, 2, 3] and doc["layers"][1] == "conv1"
    assert doc["variants"][0]["verdict"] == printed[header + 3].removeprefix("zero: ")


def test_csv_out_and_a_filler_named_by_itself(bundled, tmp_path, capsys):
    out = tmp_path / "curves.csv"
    assert compare("--variant", "gaussian std=0.01", "--variant", "msra", "--iterations", "2",
                   "--test-iter", "1", "--layers", "conv1,ip1", "--out", str(out)) == 0  # fmt: skip
    rows = list(csv.DictReader(out.open()))
    assert {r["variant"] for r in rows} == {"gaussian std=0.01", "msra"}
    assert "conv1 act_std" in rows[0] and "ip1 dead" in rows[0]
    assert f"wrote {out}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, words",
    [
        (["--variant", "foo", "--variant", "xavier"], "unknown filler 'foo'"),
        (["--variant", "xavier"], "give 2 to 6 variants to compare, not 1"),
        (["--variant", "xavier"] * 7, "not 7"),
        (
            ["--variant", "xavier", "--variant", "msra", "--layers", "conv1,nope"],
            "the net has no layer 'nope'",
        ),
        (["--variant", "xavier", "--variant", "gaussian sdt=1"], "gaussian has no field 'sdt'"),
        (["--variant", "xavier", "--variant", "msra", "--out", "x.txt"], "a .csv or a .png file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(bundled, capsys, args, words):
    assert compare(*args) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(err) == 1 and words in err[0]


def test_a_missing_solver_is_one_line(capsys, tmp_path):
    assert main.main(["compare-init", "--solver", str(tmp_path / "none.prototxt")]) == 2
    assert capsys.readouterr().err.strip().endswith("none.prototxt: no such file")


def test_gpu_flag_without_a_usable_gpu_is_one_line(bundled, capsys, monkeypatch):
    from engine import backend

    monkeypatch.setattr(backend, "gpu_unavailable_reason", lambda: "no CUDA device")
    assert compare("--variant", "xavier", "--variant", "msra", "--gpu", "0") == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(err) == 1 and "no GPU is usable here: no CUDA device" in err[0]
