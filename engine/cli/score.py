"""`main.py test --model M --weights W --iterations N [--gpu]`, printing as `caffe test` does."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from engine import backend
from engine.cli import glog
from engine.cli.common import read_net
from engine.cli.train import provide_bundled_mnist
from engine.errors import EngineError
from engine.net import Net
from proto import caffe_pb2


def score(net: Net, iterations: int, say: Callable[[str], None]) -> dict[str, float]:
    totals: list[float] = []
    owners: list[int] = []
    loss = 0.0
    say(f"Running for {iterations} iterations.")
    for i in range(iterations):
        loss += net.forward_from_to()
        idx = 0
        for j, blob_id in enumerate(net.output_blob_indices):
            name = net.blob_names[blob_id]
            for value in backend.to_host(net.blob_list[blob_id].data).ravel():
                if i == 0:
                    totals.append(float(value))
                    owners.append(j)
                else:
                    totals[idx] += float(value)
                idx += 1
                say(f"Batch {i}, {name} = {value:g}")
    say(f"Loss: {loss / iterations:g}")
    means: dict[str, float] = {}
    for total, j in zip(totals, owners):
        blob_id = net.output_blob_indices[j]
        name = net.blob_names[blob_id]
        weight = net.blob_loss_weights[blob_id]
        mean = total / iterations
        suffix = f" (* {weight:g} = {weight * mean:g} loss)" if weight else ""
        say(f"{name} = {mean:g}{suffix}")
        means.setdefault(name, mean)
    return means


def run(args: argparse.Namespace) -> int:
    from proto import binaryio

    if args.iterations < 1:
        raise EngineError("--iterations must be at least 1")
    if args.gpu:
        backend.set_mode_gpu()
    say = glog.printer("caffe.cpp:0")
    param = read_net(args.model)
    provide_bundled_mnist([param], say)
    net = Net(param, phase=caffe_pb2.TEST)
    net.copy_trained_layers_from(binaryio.read_caffemodel(args.weights))
    score(net, args.iterations, say)
    return 0
