"""`main.py test --model M --weights W [--iterations N] [--gpu G] [--stage S] [--level N]`, as `caffe test`.

The net is built in the TEST phase; for each of N batches every element of every output blob is
logged as "Batch K, NAME = X"; then "Loss: X" (the mean of the forward losses) and, per output
element, the mean "NAME = X", with " (* W = Y loss)" for outputs that carry a loss weight. Sums and
means are kept in float32, as Caffe keeps them, so the printed 6 significant digits agree.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from engine import backend, pymodules
from engine.cli import common, glog
from engine.cli.train import bundled_data
from engine.data.paths import DEFAULT
from engine.errors import naming_file
from engine.net import Net
from proto import caffe_pb2

f32 = np.float32


def score(net: Net, iterations: int, say: Callable[[str], None]) -> dict[str, float]:
    """Caffe's scoring loop; returns the mean of each output element, keyed NAME (or NAME[i])."""
    totals: list[np.float32] = []
    owners: list[int] = []
    loss = f32(0)
    say(f"Running for {iterations} iterations.")
    for i in range(iterations):
        loss += f32(net.forward_from_to())
        idx = 0
        for j, blob_id in enumerate(net.output_blob_indices):
            name = net.blob_names[blob_id]
            for value in backend.to_host(net.blob_list[blob_id].data).astype(f32).ravel():
                if i == 0:
                    totals.append(value)
                    owners.append(j)
                else:
                    totals[idx] += value
                idx += 1
                say(f"Batch {i}, {name} = {value:g}")
    say(f"Loss: {loss / f32(iterations):g}")
    means: dict[str, float] = {}
    for k, (total, j) in enumerate(zip(totals, owners)):
        blob_id = net.output_blob_indices[j]
        name = net.blob_names[blob_id]
        weight = f32(net.blob_loss_weights[blob_id])
        mean = total / f32(iterations)
        suffix = f" (* {weight:g} = {weight * mean:g} loss)" if weight else ""
        say(f"{name} = {mean:g}{suffix}")
        element = k - owners.index(j)  # the index within its blob
        means[name if net.blob_list[blob_id].count() == 1 else f"{name}[{element}]"] = float(mean)
    return means


def run(args: argparse.Namespace) -> int:
    say = glog.tool_printer(330)
    if not args.model:
        raise common.CliError("Need a model definition to score.")
    if not args.weights:
        raise common.CliError("Need model weights to score.")
    common.check_iterations(args.iterations)
    stages = common.stages_from_flags(args.stage)
    common.require_file(args.model, "--model")
    param = common.net_for(args.model, caffe_pb2.TEST, args.level, stages)
    copy_weights = common.read_weights(args.weights)
    gpus = common.use_single_gpu(common.parse_gpus(args.gpu), say)
    if gpus:
        say(f"Use GPU with device ID {gpus[0]}")
        say(f"GPU device name: {common.device_properties(gpus[0])['name']}")
        common.set_device(gpus[0])
    else:
        say("Use CPU.")
        backend.set_mode_cpu()
    data_paths = bundled_data([param], DEFAULT, say)
    with pymodules.for_nets([args.model], [param]):
        with naming_file(args.model):
            net = Net(param, data_paths=data_paths)
        try:
            copy_weights(net)
            score(net, args.iterations, say)
        finally:
            net.close()
    return 0
