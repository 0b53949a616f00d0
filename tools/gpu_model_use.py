"""This round's features on the GPU, end to end through main.py (tools/gpu_check.sh runs it):

    python tools/gpu_model_use.py [--cpu]

In a temporary folder: three classes of generated 28x28 images -> `dataset` -> a small net trained
on them with `train --gpu 0` -> `deploy` -> `classify --gpu 0` on one image of each class ->
`evaluate --gpu 0` on the validation set -> `compare-init --gpu 0` with two initialisations.
Prints each command's last line; exit 0 when every command succeeded and the net learned (validation
top-1 above chance), 1 otherwise, 2 without a GPU. ``--cpu`` runs the same on the CPU (a dry run).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
CLASSES = ("rows", "columns", "dots")

NET = """name: "Shapes"
layer {{ name: "data" type: "Data" top: "data" top: "label" include {{ phase: TRAIN }}
  transform_param {{ scale: 0.00390625 }}
  data_param {{ source: "{root}/set/train_lmdb" batch_size: 30 backend: LMDB }} }}
layer {{ name: "data" type: "Data" top: "data" top: "label" include {{ phase: TEST }}
  transform_param {{ scale: 0.00390625 }}
  data_param {{ source: "{root}/set/val_lmdb" batch_size: 30 backend: LMDB }} }}
layer {{ name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param {{ num_output: 8 kernel_size: 5 weight_filler {{ type: "xavier" }} }} }}
layer {{ name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param {{ pool: MAX kernel_size: 2 stride: 2 }} }}
layer {{ name: "relu1" type: "ReLU" bottom: "pool1" top: "pool1" }}
layer {{ name: "ip1" type: "InnerProduct" bottom: "pool1" top: "ip1"
  inner_product_param {{ num_output: 3 weight_filler {{ type: "xavier" }} }} }}
layer {{ name: "accuracy" type: "Accuracy" bottom: "ip1" bottom: "label" top: "accuracy"
  include {{ phase: TEST }} }}
layer {{ name: "loss" type: "SoftmaxWithLoss" bottom: "ip1" bottom: "label" top: "loss" }}
"""

SOLVER = """net: "{root}/net.prototxt"
test_iter: 1 test_interval: 40 base_lr: 0.02 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed"
display: 20 max_iter: 80 snapshot_prefix: "{root}/shapes" solver_mode: {mode} random_seed: 1
"""


def draw(kind: str, rng: np.random.Generator) -> Image.Image:
    image = rng.integers(0, 60, (28, 28)).astype(np.uint8)
    offset = int(rng.integers(0, 4))
    if kind == "rows":
        image[offset::4, :] = 230
    elif kind == "columns":
        image[:, offset::4] = 230
    else:
        image[offset::4, offset::4] = 255
    return Image.fromarray(image, "L")


def run(step: str, args: list[str]) -> tuple[bool, str]:
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), *args], capture_output=True, text=True)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    print(f"{step}: exit {done.returncode}; {last}", flush=True)
    if done.returncode != 0:
        print("\n".join(lines[-8:]))
    return done.returncode == 0, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="a dry run on the CPU")
    cpu = parser.parse_args().cpu
    gpu = [] if cpu else ["--gpu", "0"]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        rng = np.random.default_rng(0)
        for kind in CLASSES:
            (root / "images" / kind).mkdir(parents=True)
            for i in range(40):
                draw(kind, rng).save(root / "images" / kind / f"{i:02d}.png")
        (root / "net.prototxt").write_text(NET.format(root=root))
        (root / "solver.prototxt").write_text(SOLVER.format(root=root, mode="CPU" if cpu else "GPU"))
        steps = [
            ("dataset", ["dataset", str(root / "images"), str(root / "set"), "--gray", "--quiet"]),
            ("train", ["train", "--solver", str(root / "solver.prototxt"), *(["--gpu", "0"] if gpu else [])]),
            ("deploy", ["deploy", str(root / "net.prototxt"), str(root / "deploy.prototxt")]),
        ]
        for step, args in steps:
            if not run(step, args)[0]:
                return 1
        weights = str(root / "shapes_iter_80.caffemodel")
        model = ["--model", str(root / "deploy.prototxt"), "--weights", weights]
        samples = [str(root / "images" / kind / "00.png") for kind in CLASSES]
        ok, _ = run(
            "classify", ["classify", *model, "--labels", str(root / "set" / "labels.txt"), *gpu, *samples]
        )
        ok_eval, printed = run(
            "evaluate", ["evaluate", *model, "--data", str(root / "set" / "val_lmdb"), *gpu]
        )
        variants = ["--variant", "xavier", "--variant", "zero=constant 0", "--iterations", "20"]
        ok_init, _ = run(
            "compare-init", ["compare-init", "--solver", str(root / "solver.prototxt"), *variants, *gpu]
        )
        top1 = [line for line in printed.splitlines() if line.startswith("Top-1 accuracy:")]
        accuracy = float(top1[0].split()[2]) if top1 else 0.0
        print(f"validation top-1 {accuracy:.3f} (chance {1 / len(CLASSES):.3f})")
        return 0 if ok and ok_eval and ok_init and accuracy > 2 / len(CLASSES) else 1


if __name__ == "__main__":
    sys.exit(main())
