"""`main.py time --model M --iterations N [--gpu]`: Caffe's per-layer benchmark.

As `caffe time`: one forward and backward to warm up, then N timed iterations of every layer's
forward and backward (backward runs for every layer, needed or not), averaged per layer.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from engine import backend
from engine.cli.common import phase_value, read_net
from engine.errors import EngineError
from engine.net import Net


def benchmark(net: Net, iterations: int, say: Callable[[str], None] = print) -> dict[str, float]:
    say("Performing Forward")
    loss = net.forward_from_to()
    say(f"Initial loss: {loss:g}")
    say("Performing Backward")
    net.backward()
    n = len(net.layers)
    forward_ms = [0.0] * n
    backward_ms = [0.0] * n
    say("*** Benchmark begins ***")
    say(f"Testing for {iterations} iterations.")
    total_start = time.perf_counter()
    forward_total = backward_total = 0.0
    for it in range(1, iterations + 1):
        iter_start = time.perf_counter()
        for i, layer in enumerate(net.layers):
            t = time.perf_counter()
            layer.reshape(net.bottom_vecs[i], net.top_vecs[i])
            layer.forward(net.bottom_vecs[i], net.top_vecs[i])
            backend.synchronize()
            forward_ms[i] += (time.perf_counter() - t) * 1e3
        forward_total += (time.perf_counter() - iter_start) * 1e3
        back_start = time.perf_counter()
        for i in range(n - 1, -1, -1):
            t = time.perf_counter()
            net.layers[i].backward(net.top_vecs[i], net.bottom_need_backward[i], net.bottom_vecs[i])
            backend.synchronize()
            backward_ms[i] += (time.perf_counter() - t) * 1e3
        backward_total += (time.perf_counter() - back_start) * 1e3
        say(f"Iteration: {it} forward-backward time: {(time.perf_counter() - iter_start) * 1e3:.3f} ms.")
    say("Average time per layer: ")
    for i, name in enumerate(net.layer_names):
        say(f"{name:>10}\tforward: {forward_ms[i] / iterations:.5f} ms.")
        say(f"{name:>10}\tbackward: {backward_ms[i] / iterations:.5f} ms.")
    total_ms = (time.perf_counter() - total_start) * 1e3
    result = {
        "forward": forward_total / iterations,
        "backward": backward_total / iterations,
        "forward_backward": total_ms / iterations,
    }
    say(f"Average Forward pass: {result['forward']:.5f} ms.")
    say(f"Average Backward pass: {result['backward']:.5f} ms.")
    say(f"Average Forward-Backward: {result['forward_backward']:.5f} ms.")
    say(f"Total Time: {total_ms:.3f} ms.")
    say("*** Benchmark ends ***")
    return result


def run(args: argparse.Namespace) -> int:
    if args.iterations < 1:
        raise EngineError("--iterations must be at least 1")
    if args.gpu:
        backend.set_mode_gpu()
    net = Net(read_net(args.model), phase=phase_value(args.phase))
    benchmark(net, args.iterations)
    return 0
