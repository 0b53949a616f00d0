"""The GPU check's training stages (tools/gpu_check.sh runs them on a machine with a CUDA device).

    python tools/gpu_train.py            LeNet trained through engine.trainer.Trainer (what the app's
                                         Train runs) on the CPU and on the GPU from the same weights and
                                         batch: both loss curves, and their largest relative difference
    python tools/gpu_train.py --time NET main.py time --gpu 0 on lenet, cifar10_quick or inception
                                         (resources/examples/inception.prototxt, GoogLeNet-mini)

Exit 0 when the GPU run trained and agrees with the CPU's (within ``AGREE``), 1 otherwise, 2 without a GPU.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from google.protobuf import text_format  # noqa: E402

from bench import nets  # noqa: E402
from bench.lenet_train import LENET, batch  # noqa: E402
from engine import backend  # noqa: E402
from engine.events import Event, Iteration  # noqa: E402
from engine.solvers import create_solver  # noqa: E402
from engine.trainer import Trainer  # noqa: E402
from proto import caffe_pb2  # noqa: E402

SOLVER = (
    'base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: "inv" gamma: 0.0001 power: 0.75 max_iter: 50'
    " snapshot_after_train: false"  # the curves are compared; nothing is written (not into the checkout)
)
AGREE = 1e-3  # float32 on two devices: the sums run in other orders, and 50 steps carry the differences on
DRIFTS = 10  # ... as far as a one-ulp nudge of the weights carries the CPU's own run, give or take


def solver_param(batch_size: int = 64) -> caffe_pb2.SolverParameter:
    param = text_format.Parse(SOLVER, caffe_pb2.SolverParameter())
    param.net_param.CopyFrom(text_format.Parse(LENET.format(batch=batch_size), caffe_pb2.NetParameter()))
    return param


def train(gpu: bool, weights: list[np.ndarray]) -> tuple[bool, list[float]]:
    """Train LeNet with the Trainer from ``weights`` on one batch; (finished, losses)."""
    (backend.set_mode_gpu if gpu else backend.set_mode_cpu)()
    losses: list[float] = []

    def build():  # type: ignore[no-untyped-def]
        solver = create_solver(solver_param(), log_fn=lambda line: None)
        xp = solver.net.xp
        for blob, value in zip(solver.net.learnable_params, weights):
            blob.data[...] = backend.to_module(value, xp)
        data, label = batch(64)
        solver.net.blob_by_name("data").data[...] = backend.to_module(data, xp)
        solver.net.blob_by_name("label").data[...] = backend.to_module(label, xp)
        return solver

    def listen(event: Event) -> None:
        if isinstance(event, Iteration):
            losses.append(event.loss)

    finished = Trainer(build, listen).run()
    return finished, losses


def largest_difference(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a, b))


def check_training() -> int:
    """The GPU's curve against the CPU's, judged by how far float32 training drifts on its own: the
    CPU again from weights nudged by one unit in the last place is the yardstick."""
    backend.set_mode_cpu()
    start = create_solver(solver_param(), log_fn=lambda line: None)
    weights = [backend.to_host(blob.data).copy() for blob in start.net.learnable_params]
    nudged = [np.nextafter(w, np.float32(np.inf)) for w in weights]
    cpu_done, cpu = train(False, weights)
    _, cpu_nudged = train(False, nudged)
    gpu_done, gpu = train(True, weights)
    if not (cpu_done and gpu_done) or len(cpu) != len(gpu) or not gpu:
        print(f"FAILED: CPU run finished {cpu_done} ({len(cpu)} iterations), GPU {gpu_done} ({len(gpu)})")
        return 1
    worst = largest_difference(cpu, gpu)
    drift = largest_difference(cpu, cpu_nudged)
    print("CPU losses:", " ".join(f"{v:.5f}" for v in cpu[::10]))
    print("GPU losses:", " ".join(f"{v:.5f}" for v in gpu[::10]))
    agree = np.isfinite(gpu).all() and (worst <= AGREE or worst <= DRIFTS * drift)
    verdict = "agree" if agree else "DISAGREE"
    print(
        f"Trainer on the GPU: {len(gpu)} iterations, loss {gpu[0]:.4f} -> {gpu[-1]:.4f}; "
        f"the CPU's curve and the GPU's {verdict} (largest relative difference {worst:.2e}; the CPU "
        f"from weights one ulp apart drifts {drift:.2e})"
    )
    return 0 if agree else 1


def time_net(name: str) -> int:
    texts = {
        "lenet": lambda: LENET.format(batch=64),
        "cifar10_quick": nets.cifar10_quick,
        "inception": lambda: (ROOT / "resources/examples/inception.prototxt").read_text(),
    }
    with tempfile.TemporaryDirectory() as folder:
        model = Path(folder) / f"{name}.prototxt"
        model.write_text(texts[name]())
        command = [sys.executable, str(ROOT / "main.py"), "time", "--model", str(model), "--gpu", "0"]
        command += ["--iterations", "20"]
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    lines = (done.stdout + done.stderr).splitlines()
    average = [line for line in lines if "Average Forward-Backward" in line]
    if done.returncode != 0 or not average:
        print("\n".join(lines[-5:]))
        return 1
    print(f"{name}: {average[-1].split('] ')[-1]}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", choices=["lenet", "cifar10_quick", "inception"])
    args = parser.parse_args()
    reason = backend.gpu_unavailable_reason()
    if reason:
        print(f"no GPU to check: {reason}")
        return 2
    return time_net(args.time) if args.time else check_training()


if __name__ == "__main__":
    sys.exit(main())
