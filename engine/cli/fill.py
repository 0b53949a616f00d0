"""`main.py fill --model M [--phase P] [--seed S] OUT.npz|OUT.caffemodel|OUT.caffemodel.h5`: the
seeded initial parameters, in the format the output's name says: an npz of 'LAYER/INDEX' arrays, or
Caffe weights (binary or HDF5) any reader of caffemodels opens. An output that is the net itself
(the same file, through a link too) or of another extension is refused before anything is written."""

from __future__ import annotations

import argparse
import os

import numpy as np

from engine import backend, pymodules, rng
from engine.cli.common import CliError, phase_value, read_net
from engine.errors import naming_file
from engine.net import Net
from proto.atomic import atomic_file

FORMATS = (".npz", ".caffemodel.h5", ".caffemodel")


def output_format(output: str, inputs: list[str]) -> str:
    """The output's format (one of FORMATS); CliError for another name or one of ``inputs``."""
    for path in inputs:
        try:
            same = os.path.samefile(path, output)  # a hard link or a link to it is the same file
        except OSError:
            same = os.path.abspath(path) == os.path.abspath(output)
        if same:
            raise CliError(f"{output}: it is the net itself ({path}); refusing to overwrite it")
    kind = next((f for f in FORMATS if output.lower().endswith(f)), None)
    if kind is None:
        raise CliError(f"{output}: the output must end in {', '.join(FORMATS)}")
    return kind


def build(path: str, phase: int, seed: int) -> Net:
    param = read_net(path)
    with rng.seeded(seed), naming_file(path), pymodules.for_nets([path], [param]):
        return Net(param, phase=phase, xp=np)


def initial_parameters(path: str, phase: int, seed: int) -> dict[str, np.ndarray]:
    """Every parameter blob of the net as its fillers draw it, keyed 'LAYER/INDEX'."""
    net = build(path, phase, seed)
    try:
        return arrays_of(net)
    finally:
        net.close()


def arrays_of(net: Net) -> dict[str, np.ndarray]:
    return {
        f"{name}/{i}": backend.to_host(blob.data)
        for name, layer in zip(net.layer_names, net.layers)
        for i, blob in enumerate(layer.blobs)
    }


def write(net: Net, arrays: dict[str, np.ndarray], output: str, kind: str) -> None:
    if kind == ".npz":
        with atomic_file(output) as tmp, open(tmp, "wb") as f:  # umask's permissions, never a leak
            np.savez(f, **arrays)  # type: ignore[arg-type]
    elif kind == ".caffemodel.h5":
        from engine.weights import write_net_hdf5

        write_net_hdf5(net, output)
    else:
        from proto import binaryio

        binaryio.write_caffemodel(output, net.to_proto())


def run(args: argparse.Namespace) -> int:
    kind = output_format(args.output, [args.model])
    net = build(args.model, phase_value(args.phase), args.seed)
    try:
        arrays = arrays_of(net)
        write(net, arrays, args.output, kind)
    finally:
        net.close()
    total = sum(a.size for a in arrays.values())
    print(f"wrote {len(arrays)} parameter blobs ({total} values) to {args.output}")
    return 0
