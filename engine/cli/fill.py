"""`main.py fill --model M [--phase P] [--seed S] OUT.npz`: the seeded initial parameters."""

from __future__ import annotations

import argparse

import numpy as np

from engine import backend, pymodules, rng
from engine.cli.common import phase_value, read_net
from engine.errors import naming_file
from engine.net import Net
from proto.atomic import atomic_file


def initial_parameters(path: str, phase: int, seed: int) -> dict[str, np.ndarray]:
    """Every parameter blob of the net as its fillers draw it, keyed 'LAYER/INDEX'."""
    param = read_net(path)
    with rng.seeded(seed), naming_file(path), pymodules.for_nets([path], [param]):
        net = Net(param, phase=phase, xp=np)
    return {
        f"{name}/{i}": backend.to_host(blob.data)
        for name, layer in zip(net.layer_names, net.layers)
        for i, blob in enumerate(layer.blobs)
    }


def run(args: argparse.Namespace) -> int:
    arrays = initial_parameters(args.model, phase_value(args.phase), args.seed)
    with atomic_file(args.output) as tmp, open(tmp, "wb") as f:  # umask's permissions, never a leak
        np.savez(f, **arrays)  # type: ignore[arg-type]
    total = sum(a.size for a in arrays.values())
    print(f"wrote {len(arrays)} parameter blobs ({total} values) to {args.output}")
    return 0
