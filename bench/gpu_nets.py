"""GPU training speed and memory on real nets: this engine against PyTorch, side by side in one run.

    python -m bench.gpu_nets [--nets lenet:64 lenet:1024 cifar10_quick:100 googlenet:32] [--rounds 3]

Each net (bench.nets; LeNet from bench.lenet_train) trains one SGD step at a time (momentum 0.9,
weight decay 5e-4) on one random batch held on the GPU, four ways that alternate round by round so
all see the same machine: the engine eagerly, the engine with its CUDA graphs (engine.graphs; a net
they do not cover runs eagerly there, said so), PyTorch eager (bench.torch_nets' plain modules,
torch.optim.SGD), and PyTorch with the whole step (forward, backward, update) captured as one CUDA
graph, the floor of launch costs. Prints the median ms/step of each, the ratios engine/torch eager
and engine graphs/torch graph, and the peak GPU memory each allocator held: cupy's pools (the
engine's default pool and the graphs' own) against torch's max_memory_reserved.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from google.protobuf import text_format

from bench import nets, torch_nets
from bench.lenet_train import LENET
from proto import caffe_pb2

SOLVER = (
    'type: "SGD" base_lr: 0.001 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed" max_iter: 100000000'
)
Steps = Callable[[int], None]


def prototxt(name: str, batch: int) -> str:
    return LENET.format(batch=batch) if name == "lenet" else nets.NETS[name](batch)


def random_batch(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    data = rng.standard_normal(shape, dtype=np.float32)
    return data, rng.integers(0, 10, shape[0]).astype(np.float32)


def synchronized(steps: Callable[[int], Any], sync: Callable[[], Any]) -> Steps:
    def run(n: int) -> None:
        steps(n)
        sync()

    return run


def engine_steps(text: str, graphs_on: bool) -> tuple[Steps, tuple[int, ...], Any]:
    from engine import backend, graphs
    from engine.solvers import create_solver

    backend.set_mode_gpu()
    param = text_format.Parse(SOLVER, caffe_pb2.SolverParameter())
    param.net_param.CopyFrom(text_format.Parse(text, caffe_pb2.NetParameter()))
    solver = create_solver(param, log_fn=lambda line: None)
    data, label = solver.net.blob_by_name("data"), solver.net.blob_by_name("label")
    x, y = random_batch(data.shape)
    data.data[...], label.data[...] = solver.xp.asarray(x), solver.xp.asarray(y)

    def steps(n: int) -> None:
        graphs.ENABLED = graphs_on
        solver.step(n)

    return synchronized(steps, backend.synchronize), data.shape, solver


def torch_steps(name: str, shape: tuple[int, ...], graph: bool) -> Steps:
    import torch

    model = torch_nets.MODELS[name]().cuda().train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, weight_decay=0.0005)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = random_batch(shape)
    xt, yt = torch.from_numpy(x).cuda(), torch.from_numpy(y).long().cuda()

    def step() -> None:
        optimizer.zero_grad()
        loss_fn(model(xt), yt).backward()
        optimizer.step()

    if not graph:

        def eager(n: int) -> None:
            for _ in range(n):
                step()

        return synchronized(eager, torch.cuda.synchronize)
    side = torch.cuda.Stream()  # torch's recipe for whole-network capture: warm up on a side stream
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    whole = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)  # the graph's backward makes the gradients in its own pool
    with torch.cuda.graph(whole):
        loss_fn(model(xt), yt).backward()
        optimizer.step()

    def replay(n: int, keep: Any = (model, optimizer, xt, yt)) -> None:  # the graph's arrays live on
        for _ in range(n):
            whole.replay()

    return synchronized(replay, torch.cuda.synchronize)


def median_ms(steps: Steps, n: int, rounds: list[float]) -> None:
    start = time.perf_counter()
    steps(n)
    rounds.append((time.perf_counter() - start) / n * 1e3)


def engine_pool_mb(*solvers: Any) -> float:
    import cupy

    total = cupy.get_default_memory_pool().total_bytes()
    total += sum(s.graph_step.pool.total_bytes() for s in solvers if s.graph_step.pool is not None)
    return total / 2**20


def bench_net(spec: str, rounds: int) -> None:
    import cupy
    import torch

    name, _, batch_text = spec.partition(":")
    batch = int(batch_text or 0) or {"lenet": 64, "cifar10_quick": 100, "googlenet": 32}.get(name, 10)
    text = prototxt(name, batch)
    n = max(3, min(50, int(2000 // batch)))

    cupy.get_default_memory_pool().free_all_blocks()
    eager, shape, first = engine_steps(text, graphs_on=False)
    eager(3)
    eager_mb = engine_pool_mb(first)
    graphed, _, solver = engine_steps(text, graphs_on=True)
    graphed(3)
    graph_used = solver.graph_step.graph is not None
    both_mb = engine_pool_mb(first, solver)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    theirs = torch_steps(name, shape, graph=False)
    theirs(3)
    torch_mb = torch.cuda.max_memory_reserved() / 2**20
    floor = torch_steps(name, shape, graph=True)
    floor(3)

    times: dict[str, list[float]] = {"eager": [], "graphs": [], "torch": [], "torch graph": []}
    runs = {"eager": eager, "graphs": graphed, "torch": theirs, "torch graph": floor}
    for _ in range(rounds):
        for who, steps in runs.items():
            median_ms(steps, n, times[who])
    ms = {who: statistics.median(values) for who, values in times.items()}
    graph_note = "" if graph_used else " (no graph: the net has layers graphs do not cover; ran eagerly)"
    print(
        f"{name} b{batch}: engine {ms['eager']:.2f} ms, engine graphs {ms['graphs']:.2f}{graph_note}, "
        f"torch eager {ms['torch']:.2f}, torch graph {ms['torch graph']:.2f} | "
        f"engine/torch {ms['eager'] / ms['torch']:.2f}, best engine/torch "
        f"{min(ms['eager'], ms['graphs']) / ms['torch']:.2f}, graphs/torch graph "
        f"{ms['graphs'] / ms['torch graph']:.2f} | peak MB: engine {eager_mb:.0f}, "
        f"with graphs {both_mb - eager_mb:.0f}, torch {torch_mb:.0f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--nets", nargs="+", default=["lenet:64", "lenet:1024", "cifar10_quick:100", "googlenet:32"]
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    print(f"device: {props['name'].decode()}, cupy {cupy.__version__}", flush=True)
    for spec in args.nets:
        bench_net(spec, args.rounds)


if __name__ == "__main__":
    main()
