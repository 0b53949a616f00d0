"""`main.py time --model M [--iterations N] [--phase P] [--gpu G] [--stage S] [--level N]`, as `caffe time`.

One forward and one backward to settle memory, then N iterations that time every layer's forward
(reshape included, as Layer::Forward does it) and then every layer's backward in reverse order;
backward runs for every layer, whether the net has a loss or not (Caffe 1.0 has no forward-only
mode). Times are averaged per layer and printed with 6 significant digits, as Caffe prints them.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from engine import backend, parallel, pymodules
from engine.cli import common, glog
from engine.errors import naming_file
from engine.net import Net


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1e3


def benchmark(net: Net, iterations: int, say: Callable[[str], None] = print) -> dict[str, float]:
    """Caffe's `time`, inside the thread scope a training step runs in (engine.parallel): outside
    it each layer's threads would switch BLAS's off and on around every call, and the per-layer
    figures would not be what training sees (the ResNet's fc backward read 30 ms, 0.4 in a step)."""
    with parallel.gemms_in_pool(net.xp):
        return _benchmark(net, iterations, say)


def _benchmark(net: Net, iterations: int, say: Callable[[str], None]) -> dict[str, float]:
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
            forward_ms[i] += _ms(t)
        forward_total += _ms(iter_start)
        back_start = time.perf_counter()
        for i in range(n - 1, -1, -1):
            t = time.perf_counter()
            net.layers[i].backward(net.top_vecs[i], net.bottom_need_backward[i], net.bottom_vecs[i])
            backend.synchronize()
            backward_ms[i] += _ms(t)
        backward_total += _ms(back_start)
        say(f"Iteration: {it} forward-backward time: {_ms(iter_start):g} ms.")
    say("Average time per layer: ")
    for i, name in enumerate(net.layer_names):
        say(f"{name:>10}\tforward: {forward_ms[i] / iterations:g} ms.")
        say(f"{name:>10}\tbackward: {backward_ms[i] / iterations:g} ms.")
    total_ms = _ms(total_start)
    result = {
        "forward": forward_total / iterations,
        "backward": backward_total / iterations,
        "forward_backward": total_ms / iterations,
        "total": total_ms,
    }
    say(f"Average Forward pass: {result['forward']:g} ms.")
    say(f"Average Backward pass: {result['backward']:g} ms.")
    say(f"Average Forward-Backward: {result['forward_backward']:g} ms.")
    say(f"Total Time: {total_ms:g} ms.")
    say("*** Benchmark ends ***")
    return result


def run(args: argparse.Namespace) -> int:
    say = glog.tool_printer(341)
    if not args.model:
        raise common.CliError("Need a model definition to time.")
    common.check_iterations(args.iterations)
    phase = common.phase_value(args.phase or "TRAIN")
    stages = common.stages_from_flags(args.stage)
    common.require_file(args.model, "--model")
    param = common.net_for(args.model, phase, args.level, stages)
    gpus = common.use_single_gpu(common.parse_gpus(args.gpu), say)
    if gpus:
        say(f"Use GPU with device ID {gpus[0]}")
        common.set_device(gpus[0])
    else:
        say("Use CPU.")
        backend.set_mode_cpu()
    with pymodules.for_nets([args.model], [param]):
        with naming_file(args.model):
            net = Net(param)
        try:
            benchmark(net, args.iterations, say)
        finally:
            net.close()
    return 0
