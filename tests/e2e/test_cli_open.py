"""``python main.py PATH [--weights W]`` (and the ``barista`` script, the same entry) opens the editor on
a file; a file that cannot be read is one line on stderr and exit code 2, before any window."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "resources" / "examples"


def main(tmp_path: Path, *args: str, smoke: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"))
    env["XDG_DATA_HOME"] = str(tmp_path / "data")  # the recovery folder and settings stay in here
    if smoke:
        env["BARISTA_SMOKE"] = "1"  # print the title and status once open, then quit
    return subprocess.run(
        [sys.executable, str(REPO / "main.py"), *args], capture_output=True, text=True, timeout=300, env=env
    )


def test_a_net_opens_in_the_editor(tmp_path):
    net = tmp_path / "mlp.prototxt"
    shutil.copy(EXAMPLES / "mlp.prototxt", net)
    shutil.copy(EXAMPLES / "mlp_solver.prototxt", tmp_path)
    done = main(tmp_path, str(net))
    assert done.returncode == 0, done.stderr
    title, summary, notice = done.stdout.splitlines()[:3]
    assert title == "Barista — mlp.prototxt[*]"
    assert summary.endswith("mlp_solver.prototxt") and "Solver: mlp_solver.prototxt" in notice


def test_a_solver_opens_with_its_net_and_weights_come_along(tmp_path):
    for name in ("lenet.prototxt",):
        shutil.copy(EXAMPLES / "mnist" / name, tmp_path)
    import engine

    engine.Net(str(tmp_path / "lenet.prototxt"), engine.TEST).save(str(tmp_path / "w.caffemodel"))
    done = main(tmp_path, str(tmp_path / "lenet.prototxt"), "--weights", str(tmp_path / "w.caffemodel"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "Barista — lenet.prototxt[*]"
    assert "Weights: w.caffemodel" in done.stdout


def test_a_caffemodel_opens(tmp_path):
    shutil.copy(EXAMPLES / "mnist" / "lenet.prototxt", tmp_path / "lenet.prototxt")
    import engine

    engine.Net(str(tmp_path / "lenet.prototxt"), engine.TEST).save(str(tmp_path / "lenet.caffemodel"))
    done = main(tmp_path, str(tmp_path / "lenet.caffemodel"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "Barista — lenet.prototxt[*]"


def test_a_missing_or_broken_file_is_one_line_and_exit_code_2(tmp_path):
    done = main(tmp_path, str(tmp_path / "nowhere.prototxt"), smoke=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"error: {tmp_path / 'nowhere.prototxt'}: no such file"]
    bad = tmp_path / "bad.prototxt"
    bad.write_text('name: "x"\nlayer { name: \n')
    done = main(tmp_path, str(bad), smoke=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith(f"error: {bad}:") and ":3:" in done.stderr or ":2:" in done.stderr
    done = main(tmp_path, str(EXAMPLES / "mlp.prototxt"), "--weights", str(bad), smoke=False)
    assert done.returncode == 2 and "bad.prototxt" in done.stderr
