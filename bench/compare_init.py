"""What the initialisation experiment's per-layer statistics cost against the training they watch:
LeNet on the bundled MNIST (batch 64), one iteration against one ``layer_stats.measure`` of its
blobs (7 layers, 1.3 M values), interleaved in small blocks so that a busy machine slows both alike.

    python -m bench.compare_init [--blocks 20] [--size 5]

Prints the median milliseconds of each and their ratio: the slowdown of a run that takes the
statistics every iteration (the experiment's default); every N iterations costs a Nth of it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.cli.train import bundled_data, data_beside, read_solver, solver_nets  # noqa: E402
from engine.experiments import layer_stats  # noqa: E402
from engine.solvers import create_solver  # noqa: E402

SOLVER = ROOT / "resources" / "examples" / "mnist" / "lenet_solver.prototxt"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--size", type=int, default=5, help="iterations (and measurements) per block")
    args = parser.parse_args(argv)
    param = read_solver(str(SOLVER))
    data_paths = bundled_data(solver_nets(param), data_beside(param), lambda _line: None)
    param.test_interval, param.display = 0, 0
    param.ClearField("test_iter")
    solver = create_solver(param, log_fn=lambda _line: None, data_paths=data_paths)
    try:
        net = solver.net
        layers = layer_stats.plotted_layers(net)
        relus = layer_stats.relu_outputs(net, layers)
        solver.step(3)  # warm-up
        steps, stats = [], []
        for _ in range(args.blocks):
            start = time.perf_counter()
            solver.step(args.size)
            steps.append((time.perf_counter() - start) / args.size)
            start = time.perf_counter()
            for _ in range(args.size):
                layer_stats.measure(net, layers, relus)
            stats.append((time.perf_counter() - start) / args.size)
    finally:
        solver.close()
    step, stat = statistics.median(steps), statistics.median(stats)
    share = f"{100 * stat / step:.1f}% of an iteration; median of {args.blocks} blocks"
    print(f"LeNet b64: an iteration {1000 * step:.1f} ms, the statistics of its {len(layers)} layers "
          f"{1000 * stat:.2f} ms ({share})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
