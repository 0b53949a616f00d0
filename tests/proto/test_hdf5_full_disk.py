"""Issue 32 case 8: HDF5 weights on a full disk. HDF5 writing the file itself met the full disk
inside h5py's object finalisers: ~100 ignored tracebacks, then a segfault (exit 139) at exit, and
its temporary file left behind. The file is now built in memory and written by proto.atomic.

The full disk is a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) set in the child process: every
write past it fails as on a full disk (EFBIG), with no mount and no root needed. Before the fix this
very run ended in a segfault."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from proto import hdf5io

REPO = Path(__file__).resolve().parents[2]
LIMITED = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def many_layers(count: int = 40) -> str:
    """A net of ``count`` InnerProducts of 100x100: ~1.6 MB of weights in many datasets."""
    lines = [
        'name: "many"',
        'layer { name: "data" type: "Input" top: "ip" input_param { shape { dim: 1 dim: 100 } } }',
    ]
    lines += [
        f'layer {{ name: "ip{i}" type: "InnerProduct" bottom: "ip" top: "ip" '
        "inner_product_param { num_output: 100 } }"
        for i in range(count)
    ]
    return "\n".join(lines) + "\n"


def test_hdf5_weights_on_a_full_disk_end_in_one_line_and_leave_nothing(tmp_path):
    (tmp_path / "many.prototxt").write_text(many_layers())
    fill = ["fill", "--model", "many.prototxt", "w.caffemodel.h5"]
    done = subprocess.run(
        [sys.executable, "-c", LIMITED, str(REPO / "main.py"), *fill],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},  # this checkout's code, not an installed one
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines() == ["error: cannot write w.caffemodel.h5: File too large"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.prototxt"]


def test_hdf5_weights_still_read_back(tmp_path):
    path = tmp_path / "w.caffemodel.h5"
    weights = np.arange(12, dtype=np.float32).reshape(3, 4)
    hdf5io.write_weights(path, [hdf5io.LayerWeights("ip", [weights]), hdf5io.LayerWeights("relu", [])])
    assert hdf5io.is_hdf5(path)
    read = hdf5io.read_weights(path)
    assert list(read) == ["ip", "relu"]
    np.testing.assert_array_equal(read["ip"]["0"], weights)
    assert [p.name for p in tmp_path.iterdir()] == ["w.caffemodel.h5"]
