"""`main.py fill --model M [--phase P] [--seed S] OUT.npz`: the seeded initial parameters."""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

from engine import backend, rng
from engine.cli.common import phase_value, read_net
from engine.net import Net


def initial_parameters(path: str, phase: int, seed: int) -> dict[str, np.ndarray]:
    """Every parameter blob of the net as its fillers draw it, keyed 'LAYER/INDEX'."""
    with rng.seeded(seed):
        net = Net(read_net(path), phase=phase, xp=np)
    return {
        f"{name}/{i}": backend.to_host(blob.data)
        for name, layer in zip(net.layer_names, net.layers)
        for i, blob in enumerate(layer.blobs)
    }


def run(args: argparse.Namespace) -> int:
    arrays = initial_parameters(args.model, phase_value(args.phase), args.seed)
    folder = os.path.dirname(os.path.abspath(args.output))
    with tempfile.NamedTemporaryFile(dir=folder, suffix=".npz", delete=False) as tmp:
        np.savez(tmp, **arrays)  # type: ignore[arg-type]
        tmp.flush()
        os.fsync(tmp.fileno())
    os.replace(tmp.name, args.output)
    total = sum(a.size for a in arrays.values())
    print(f"wrote {len(arrays)} parameter blobs ({total} values) to {args.output}")
    return 0
