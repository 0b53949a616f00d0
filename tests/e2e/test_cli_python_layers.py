"""The CLI and Python layers (issue 16, "trust before code"): as Caffe, the user ran the net, so its
Python layers' modules are imported, but only those, from the net's folder after ours, and a name
that clashes with ours or Python's is refused in one line (exit 2). Files beside the net that no
layer names never run. Each module written here records its import in a marker file.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "resources" / "examples"

NET = """name: "p"
layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "py" type: "Python" bottom: "x" top: "y" python_param { module: "MODULE" layer: "Same" } }
"""
LAYER = """import caffe
import engine

open(MARKER, "w").write(f"{caffe.__name__} {caffe.Net is engine.Net} {__import__('sys').path[-1]}")


class Same(caffe.Layer):
    def setup(self, bottom, top):
        pass

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = bottom[0].data

    def backward(self, top, propagate_down, bottom):
        pass
"""


def main(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "main.py"), *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def marking(marker: Path, body: str = "") -> str:
    return f"MARKER = {str(marker)!r}\nopen(MARKER, 'w').write('imported')\n{body}"


def test_threadpoolctl_py_beside_a_plain_mlp_is_not_executed_by_train(tmp_path):
    marker = tmp_path / "threadpoolctl_ran"
    (tmp_path / "threadpoolctl.py").write_text(marking(marker))
    shutil.copy(EXAMPLES / "mlp.prototxt", tmp_path / "mlp.prototxt")
    (tmp_path / "solver.prototxt").write_text(
        'net: "mlp.prototxt"\nbase_lr: 0.01\nlr_policy: "fixed"\nmax_iter: 3\ndisplay: 1\nsolver_mode: CPU\n'
    )
    done = main("train", "--solver", str(tmp_path / "solver.prototxt"), cwd=tmp_path)  # from the net's folder
    assert done.returncode == 0, done.stderr
    assert "Optimization Done." in done.stderr
    assert not marker.exists()


def test_a_layer_beside_the_net_runs_with_the_engine_as_caffe_and_its_folder_last(tmp_path):
    marker = tmp_path / "layer_ran"
    (tmp_path / "cli_same_layer.py").write_text(LAYER.replace("MARKER", repr(str(marker))))
    (tmp_path / "net.prototxt").write_text(NET.replace("MODULE", "cli_same_layer"))
    done = main("time", "--model", "net.prototxt", "--iterations", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == f"engine True {tmp_path}"  # `import caffe` is the engine; folder appended


def test_engine_py_beside_the_net_is_refused_in_one_line_and_never_run(tmp_path):
    marker = tmp_path / "engine_ran"
    (tmp_path / "engine.py").write_text(marking(marker))
    (tmp_path / "net.prototxt").write_text(NET.replace("MODULE", "engine"))
    done = main("time", "--model", str(tmp_path / "net.prototxt"), "--iterations", "1", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "layer 'py'" in line and "module 'engine'" in line and "Barista's own package 'engine'" in line
    assert "Traceback" not in done.stderr and not marker.exists()


def test_a_standard_module_name_is_refused_and_prints_nothing(tmp_path):
    (tmp_path / "net.prototxt").write_text(NET.replace("MODULE", "this"))
    done = main("fill", "--model", str(tmp_path / "net.prototxt"), str(tmp_path / "out.npz"), cwd=tmp_path)
    assert done.returncode == 2
    assert "Zen of Python" not in done.stdout and "Beautiful is better" not in done.stdout
    assert "module 'this' (python_param.module) clashes with Python's standard module 'this'" in done.stderr
