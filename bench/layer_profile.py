"""Where a training step's time goes, inside the step as the solver runs it: per layer type, forward
and backward, and the solver's update, each with the CPU time of all threads beside the wall time.

    python -m bench.layer_profile [--nets resnet18 cifar10_quick lenet caffenet] [--steps 3] [--by-layer]

`main.py time` times each layer alone, as `caffe time` does, outside the solver's thread scope
(engine.parallel.gemms_in_pool), so its figures are not what training sees; this wraps the layers
of a Solver (bench.cpu_nets' nets, SGD on one random batch) and times ``steps`` steps after two of
warm-up. ``util`` is CPU time / wall time (2.00: both of a 2-core machine's cores busy); ``idle``
the core-milliseconds left unused (cores x wall - CPU): the serial parts worth splitting.
"""

from __future__ import annotations

import argparse
import collections
import os
import time
from collections.abc import Callable
from typing import Any

from bench import cpu_nets


def kind_of(layer: Any) -> str:
    """A layer's type, convolutions with their kernel size (Conv3, Conv1, Conv7)."""
    if layer.type == "Convolution":
        sizes = layer.param.convolution_param.kernel_size
        return f"Conv{sizes[0] if sizes else 'HxW'}"
    return str(layer.type)


class Clock:
    """Wall and all-thread CPU time, summed per key."""

    def __init__(self) -> None:
        self.wall: dict[tuple[str, str], float] = collections.defaultdict(float)
        self.cpu: dict[tuple[str, str], float] = collections.defaultdict(float)

    def timed(self, key: tuple[str, str], call: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            result = call(*args)
            self.wall[key] += time.perf_counter() - wall
            self.cpu[key] += time.process_time() - cpu
            return result

        return run

    def clear(self) -> None:
        self.wall.clear()
        self.cpu.clear()


def profile(name: str, steps: int, cores: int, by_layer: bool = False) -> None:
    step, _ = cpu_nets.engine_steps(cpu_nets.prototxt(name))
    solver = step.__self__  # type: ignore[attr-defined]
    clock = Clock()
    for layer in solver.net.layers:
        kind = f"{layer.name} ({kind_of(layer)})" if by_layer else kind_of(layer)
        layer.forward = clock.timed((kind, "forward"), layer.forward)
        layer.backward = clock.timed((kind, "backward"), layer.backward)
    for i, group in solver.net.fused.items():  # BatchNorm, Scale (ReLU) run as one (engine.fusion)
        members = solver.net.layers[i : i + group.size]
        kinds = "+".join(kind_of(layer) for layer in members)
        kind = f"{'+'.join(layer.name for layer in members)} ({kinds})" if by_layer else kinds
        group.forward = clock.timed((kind, "forward"), group.forward)
        group.backward = clock.timed((kind, "backward"), group.backward)
    solver.apply_update = clock.timed(("SGD update", ""), solver.apply_update)
    solver.step(2)
    clock.clear()
    wall, cpu = time.perf_counter(), time.process_time()
    solver.step(steps)
    wall_ms, cpu_ms = ((time.perf_counter() - wall) / steps * 1e3, (time.process_time() - cpu) / steps * 1e3)
    print(f"{name}: {wall_ms:.1f} ms a step, {cpu_ms:.1f} ms of CPU (util {cpu_ms / wall_ms:.2f} of {cores})")
    counted = 0.0
    for key in sorted(clock.wall, key=lambda k: -clock.wall[k]):
        w, c = clock.wall[key] / steps * 1e3, clock.cpu[key] / steps * 1e3
        counted += w
        if w >= 0.05:
            label = f"{key[0]} {key[1]}".strip()
            print(f"  {label:40s} {w:8.1f} ms  CPU {c:8.1f}  util {c / w:4.2f}  idle {cores * w - c:6.1f}")
    print(f"  {'the rest (solver loop)':40s} {wall_ms - counted:8.1f} ms")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nets", nargs="+", default=["resnet18", "cifar10_quick", "lenet", "caffenet"])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--by-layer", action="store_true", help="each layer by name, not per type")
    args = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    for name in args.nets:
        profile(name, args.steps, cores, args.by_layer)


if __name__ == "__main__":
    main()
