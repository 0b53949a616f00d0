"""CPU training speed on real nets: this engine, PyTorch and real Caffe, side by side in one run.

    python -m bench.cpu_nets [--nets cifar10_quick caffenet resnet18 lenet] [--threads 2]
                             [--rounds 3] [--steps N] [--caffe ENV_SH | --no-caffe]

Each net (bench.nets; CIFAR-10 quick at batch 100, CaffeNet 10, the ResNet-18-style net 8, LeNet
64) trains one SGD step at a time (momentum 0.9, weight decay 5e-4) on one random batch: the engine
through its Solver, PyTorch through plain nn modules (bench.torch_nets) with torch.optim.SGD, real
Caffe through pycaffe's SGDSolver in a child process of Caffe's own Python (bench/caffe_steps.py).
After a warm-up they alternate, ``steps`` steps each per round, so all see the same machine load;
prints each one's median ms/step (wall; and the CPU time of all its threads, which on a busy
machine tells more: threads waiting for a core spin or sleep) and the ratios engine/peer of the
wall times (< 1: the engine is faster), with the machine's load average, and each one's peak
resident memory (VmHWM of a child process that builds the net and trains warm-up + one round
of steps, alone: imports, net, solver state and scratch; ``--no-memory`` skips it). Real Caffe is found
through the env.sh a Caffe 1.0 build script writes ($CAFFE_ROOT/env.sh, else
~/caffe-ref/env.sh); without one its column is skipped, said so.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.lenet_train import LENET


def _threads_before_numpy() -> None:
    """BLAS pools are sized when numpy loads (and the engine's pool from them): 2 unless told."""
    argv = sys.argv
    wanted = argv[argv.index("--threads") + 1] if "--threads" in argv[:-1] else "2"
    if wanted != "0":
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = wanted


_threads_before_numpy()

import numpy as np  # noqa: E402
from google.protobuf import text_format  # noqa: E402

from bench import nets, torch_nets  # noqa: E402
from proto import caffe_pb2  # noqa: E402

SOLVER = 'base_lr: 0.001 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed" max_iter: 100000000'
STEPS = {"cifar10_quick": 5, "caffenet": 2, "resnet18": 1, "lenet": 20}
Steps = Callable[[int], "tuple[float, float] | None"]


def prototxt(name: str) -> str:
    return LENET.format(batch=64) if name == "lenet" else nets.NETS[name]()


def random_batch(shape: tuple[int, ...], count: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal(shape, dtype=np.float32), rng.integers(0, 10, count).astype(np.float32)


def engine_steps(text: str) -> tuple[Steps, tuple[int, ...]]:
    from engine.solvers import create_solver

    param = text_format.Parse(SOLVER, caffe_pb2.SolverParameter())
    param.net_param.CopyFrom(text_format.Parse(text, caffe_pb2.NetParameter()))
    solver = create_solver(param, log_fn=lambda line: None)
    data, label = solver.net.blob_by_name("data"), solver.net.blob_by_name("label")
    data.data[...], label.data[...] = random_batch(data.shape, label.shape[0])
    return solver.step, data.shape


def torch_steps(name: str, shape: tuple[int, ...]) -> Steps:
    import torch

    model = torch_nets.MODELS[name]()
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, weight_decay=0.0005)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = random_batch(shape, shape[0])
    xt, yt = torch.from_numpy(x), torch.from_numpy(y).long()

    def steps(n: int) -> None:
        for _ in range(n):
            optimizer.zero_grad(set_to_none=False)
            loss_fn(model(xt), yt).backward()
            optimizer.step()

    return steps


def caffe_env(given: str | None) -> Path | None:
    candidates = (
        [given] if given else [os.path.join(os.environ.get("CAFFE_ROOT", ""), "env.sh"), "~/caffe-ref/env.sh"]
    )
    for candidate in candidates:
        path = Path(candidate).expanduser()
        if candidate and path.is_file():
            return path
    return None


class CaffeSteps:
    """pycaffe in a child process, fed step counts on stdin (bench/caffe_steps.py)."""

    def __init__(self, env: Path, text: str, threads: int, folder: Path) -> None:
        net = folder / "net.prototxt"
        net.write_text(text)
        script = Path(__file__).with_name("caffe_steps.py")
        env_vars = dict(os.environ, GLOG_minloglevel="2")
        if threads:
            env_vars.update(OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        self.child = subprocess.Popen(
            ["bash", "-c", 'source "$1" && exec "$CAFFE_PY" "$2" "$3"', "-", str(env), str(script), str(net)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env_vars,
        )
        assert self.child.stdout is not None
        if self.child.stdout.readline().strip() != "ready":
            raise RuntimeError("real Caffe did not start (see its messages above)")

    def __call__(self, n: int) -> tuple[float, float]:
        """Runs n steps: (wall, CPU) ms per step, as the child measured them."""
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write(f"{n}\n")
        self.child.stdin.flush()
        wall, cpu = self.child.stdout.readline().split()
        return float(wall), float(cpu)

    def close(self) -> None:
        if self.child.stdin is not None:
            self.child.stdin.close()
        self.child.wait()


def peak_mb(who: str, name: str, args: argparse.Namespace, env: Path | None) -> float | None:
    """The peak resident MB of a child that trains ``name`` on ``who``'s side alone (None: it failed)."""
    line = [sys.executable, "-m", "bench.cpu_nets", "--peak-of", who, "--nets", name]
    line += ["--threads", str(args.threads), "--steps", str(args.steps or STEPS[name])]
    if who == "caffe" and env is not None:
        line += ["--caffe", str(env)]
    done = subprocess.run(line, capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    words = done.stdout.split()
    return float(words[-1]) if done.returncode == 0 and words else None


def high_water_mb(pid: int | str = "self") -> float:
    """A process's peak resident MB (VmHWM: its own since its exec; getrusage's ru_maxrss would
    carry the forking parent's)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc (not Linux?)")


def peak_child(who: str, name: str, args: argparse.Namespace, folder: Path) -> None:
    """In the child: warm-up and one round of steps on one side, then its peak resident MB."""
    text = prototxt(name)
    steps = args.steps or STEPS[name]
    if who == "caffe":
        env = caffe_env(args.caffe)
        assert env is not None
        caffe = CaffeSteps(env, text, args.threads, folder)
        caffe(1 + steps)
        peak = high_water_mb(caffe.child.pid)  # bash exec'd Caffe's Python: the same process
        caffe.close()
    else:
        engine, shape = engine_steps(text)
        run = engine if who == "engine" else torch_steps(name, shape)
        run(1 + steps)
        peak = high_water_mb()
    print(f"{peak:.1f}")


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def bench_net(name: str, args: argparse.Namespace, env: Path | None, folder: Path) -> None:
    text = prototxt(name)
    engine, shape = engine_steps(text)
    runners: dict[str, Steps] = {"engine": engine}
    if not args.no_torch:
        runners["torch"] = torch_steps(name, shape)
    caffe = CaffeSteps(env, text, args.threads, folder) if env else None
    if caffe:
        runners["caffe"] = caffe
    steps = args.steps or STEPS[name]
    for run in runners.values():  # warm-up: scratch arrays, BLAS buffers, first-touch pages
        run(1)
    times: dict[str, list[float]] = {who: [] for who in runners}
    cpu: dict[str, list[float]] = {who: [] for who in runners}
    before = load()
    for _ in range(args.rounds):
        for who, run in runners.items():
            time.sleep(args.settle)  # the last one's BLAS / OpenMP threads stop spinning (see --settle)
            start, used = time.perf_counter(), time.process_time()
            measured = run(steps)
            if measured is None:  # in this process
                measured = (
                    (time.perf_counter() - start) * 1e3 / steps,
                    (time.process_time() - used) * 1e3 / steps,
                )
            times[who].append(measured[0])
            cpu[who].append(measured[1])
    if caffe:
        caffe.close()
    median = {who: statistics.median(ms) for who, ms in times.items()}
    print(
        f"{name}, batch {shape[0]}, {args.rounds} rounds x {steps} steps, alternating "
        f"({before}; after: {load()})"
    )
    peaks = {who: None if args.no_memory else peak_mb(who, name, args, env) for who in median}
    for who, ms in median.items():
        spread = ", ".join(f"{t:.1f}" for t in times[who])
        peak = "" if args.no_memory else f"   peak RSS {peaks[who] or float('nan'):6.1f} MB"
        print(
            f"  {who:7s} {ms:9.1f} ms/step{peak}   (rounds: {spread}; CPU time of all threads "
            f"{statistics.median(cpu[who]):.1f} ms/step)"
        )
    for peer in ("torch", "caffe"):
        if peer in median:
            memory = ""
            if peaks["engine"] and peaks[peer]:
                memory = f", peak RSS {peaks['engine'] / peaks[peer]:.2f}"  # type: ignore[operator]
            print(f"  ratio engine/{peer} {median['engine'] / median[peer]:.2f}{memory}")
    if not caffe:
        print("  caffe: no build found (set CAFFE_ROOT or pass --caffe ENV_SH): column skipped")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nets", nargs="+", default=["cifar10_quick", "caffenet", "resnet18", "lenet"])
    parser.add_argument("--threads", type=int, default=2, help="threads for all three (0: their defaults)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=0, help="steps per round (0: a default per net)")
    parser.add_argument(
        "--caffe", help="real Caffe's env.sh (default: $CAFFE_ROOT/env.sh, ~/caffe-ref/env.sh)"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=0.3,
        help="seconds between one's round and the next one's: OpenBLAS's idle threads spin about 0.1 s "
        "after their last call (Caffe's, in its child process), taking a core from whoever runs next",
    )
    parser.add_argument("--no-caffe", action="store_true")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory children")
    parser.add_argument("--peak-of", choices=("engine", "torch", "caffe"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
        if not args.no_torch and args.peak_of in (None, "torch"):  # an engine child holds no torch
            import torch

            torch.set_num_threads(args.threads)
    env = None if args.no_caffe else caffe_env(args.caffe)
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        if args.peak_of:
            peak_child(args.peak_of, args.nets[0], args, Path(folder))
            return
        for name in args.nets:
            bench_net(name, args, env, Path(folder))


if __name__ == "__main__":
    main(sys.argv[1:])
