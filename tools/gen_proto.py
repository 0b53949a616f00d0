"""Regenerate proto/caffe_pb2.py and proto/caffe_pb2.pyi from proto/caffe.proto.

Usage (from the repository root):
    python tools/gen_proto.py          # rewrite the checked-in files
    python tools/gen_proto.py --check  # exit 1 if they are stale, 0 otherwise

Needs grpcio-tools (it bundles protoc); the output depends on its version.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent.parent / "proto"
SOURCE = "caffe.proto"
OUTPUTS = ("caffe_pb2.py", "caffe_pb2.pyi")


def generate(out_dir: Path) -> None:
    """Run protoc on caffe.proto, writing the Python module and stub into out_dir."""
    cmd = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{PROTO_DIR}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        str(PROTO_DIR / SOURCE),
    ]
    subprocess.run(cmd, check=True)


def stale_files() -> list[str]:
    """Return the names of checked-in outputs that differ from a fresh generation."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        return [
            name
            for name in OUTPUTS
            if not (PROTO_DIR / name).is_file()
            or (PROTO_DIR / name).read_bytes() != (Path(tmp) / name).read_bytes()
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args(argv)
    if not args.check:
        generate(PROTO_DIR)
        return 0
    stale = stale_files()
    for name in stale:
        print(f"stale: proto/{name} (run: python tools/gen_proto.py)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
