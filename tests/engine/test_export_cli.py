"""`main.py export`'s plumbing: which exporter the output picks, and bad input refused in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import main as barista
from engine.export import INSTALL_HINT, ExportError, needs

REPO = Path(__file__).resolve().parents[2]
LENET = str(REPO / "resources" / "examples" / "mnist" / "lenet.prototxt")
SOLVER = str(REPO / "resources" / "examples" / "mnist" / "lenet_solver.prototxt")


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    try:
        code = barista.main(["export", *argv])
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


def test_the_output_must_be_onnx_or_py(capsys, tmp_path):
    assert "must end in .onnx (ONNX) or .py" in refusal(capsys, LENET, str(tmp_path / "net.txt"))


def test_the_paths_are_counted(capsys, tmp_path):
    assert "export NET.prototxt OUT.onnx|OUT.py" in refusal(capsys, LENET)
    assert "exactly one output folder" in refusal(capsys, "--solver", SOLVER, LENET, str(tmp_path))


def test_missing_inputs_are_named(capsys, tmp_path):
    missing = str(tmp_path / "absent.prototxt")
    assert f"{missing}: no such file" in refusal(capsys, missing, str(tmp_path / "a.onnx"))
    assert "--weights" in refusal(capsys, LENET, str(tmp_path / "a.onnx"), "--weights", missing)
    assert "--solver" in refusal(capsys, "--solver", missing, str(tmp_path / "pkg"))


def test_the_package_folder_must_be_a_folder(capsys, tmp_path):
    (tmp_path / "file").write_text("")
    assert "is not a folder" in refusal(capsys, "--solver", SOLVER, str(tmp_path / "file"))


def test_dynamic_batch_is_for_onnx(capsys, tmp_path):
    out = str(tmp_path / "a.py")
    assert "--dynamic-batch applies to .onnx" in refusal(capsys, LENET, out, "--dynamic-batch")


def test_a_bad_phase_is_refused(capsys, tmp_path):
    assert "--phase" in refusal(capsys, LENET, str(tmp_path / "a.onnx"), "--phase", "VAL")


def test_a_missing_extra_says_how_to_install_it():
    with pytest.raises(ExportError, match=r"export needs no_such_module_xyz, which is not installed: pip"):
        needs("no_such_module_xyz")
    assert INSTALL_HINT == "pip install -e '.[export]'"


BLOCK_EXTRA = """
import sys
class NoExtra:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("onnx", "onnxruntime", "torch"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoExtra())
import main
sys.exit(main.main(sys.argv[1:]))
"""


def test_without_the_extra_other_commands_work_and_export_says_how_to_install(tmp_path):
    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        code = [sys.executable, "-c", BLOCK_EXTRA, *argv]
        return subprocess.run(code, cwd=REPO, capture_output=True, text=True, timeout=120)

    shapes = run("splits", LENET)
    assert shapes.returncode == 0, shapes.stderr
    done = run("export", LENET, str(tmp_path / "lenet.onnx"))
    assert done.returncode == 2
    assert done.stderr == "error: export needs onnx, which is not installed: pip install -e '.[export]'\n"
    assert not (tmp_path / "lenet.onnx").exists()
