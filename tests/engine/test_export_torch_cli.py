"""`main.py export NET OUT.py` and `main.py export --solver S OUT_DIR` through the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
LENET = str(REPO / "resources" / "examples" / "mnist" / "lenet.prototxt")


def main(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "main.py"), *argv], capture_output=True, text=True, timeout=300
    )


def test_export_a_module_and_refuse_a_layer_in_one_line(tmp_path):
    done = main("export", LENET, str(tmp_path / "lenet.py"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {tmp_path / 'lenet.py'} (8 layers) and {tmp_path / 'lenet.pt'}")
    text = (tmp_path / "lenet.py").read_text()
    assert "class LeNet(nn.Module):" in text and "def load(" in text and "import engine" not in text
    bad = tmp_path / "bad.prototxt"
    bad.write_text(
        Path(LENET)
        .read_text()
        .replace('type: "ReLU"', 'type: "Im2col" convolution_param { kernel_size: 1 }')
        .replace('bottom: "ip1"\n  top: "ip1"', 'bottom: "pool2"\n  top: "cols"')
    )
    refused = main("export", str(bad), str(tmp_path / "bad.py"))
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "error: layer 'relu1' (Im2col): this layer type cannot be exported to PyTorch"
        " (no mapping is written for it yet)"
    ]
    assert not (tmp_path / "bad.py").exists()
