"""`main.py train --solver S [--weights W | --snapshot X] [--gpu]`, logging as `caffe train` does."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable

from engine import backend
from engine.cli import glog
from engine.errors import EngineError
from engine.solvers import Solver, create_solver
from proto import caffe_pb2


def resolve(path: str, beside: str) -> str:
    """Caffe resolves against the working directory; fall back to the folder of the file naming it."""
    if os.path.isabs(path) or os.path.exists(path):
        return path
    candidate = os.path.join(os.path.dirname(os.path.abspath(beside)), path)
    return candidate if os.path.exists(candidate) else path


def read_solver(path: str) -> caffe_pb2.SolverParameter:
    from proto import textio

    param = textio.read_solver(path)
    for field in ("net", "train_net"):
        if param.HasField(field):
            setattr(param, field, resolve(getattr(param, field), path))
    param.test_net[:] = [resolve(p, path) for p in param.test_net]
    if not param.snapshot_prefix:  # Caffe master: default to the solver file's name
        param.snapshot_prefix = os.path.splitext(path)[0]
    return param


BUNDLED = ("mnist_train_lmdb", "mnist_test_lmdb")


def solver_nets(param: caffe_pb2.SolverParameter) -> list[caffe_pb2.NetParameter]:
    from proto import textio

    paths = [param.net, param.train_net, *param.test_net]
    inline = [param.net_param, param.train_net_param, *param.test_net_param]
    return [textio.read_net(p) for p in paths if p and os.path.exists(p)] + [n for n in inline if n.layer]


def provide_bundled_mnist(nets: Iterable[caffe_pb2.NetParameter], say: Callable[[str], None]) -> None:
    """When a net reads Caffe's MNIST LMDBs and they are not where it says, use the bundled copy."""
    from engine.data import mnist, paths

    sources = [layer.data_param.source for net in nets for layer in net.layer if layer.type == "Data"]
    wanted = [s for s in sources if os.path.basename(os.path.normpath(s)) in BUNDLED]
    if not wanted or all(paths.resolve(s).exists() for s in wanted):
        return

    def progress(done: int, total: int, what: str) -> None:
        if done == total or done % 10000 == 0:
            say(f"Preparing the bundled MNIST: {what} {done}/{total}")

    paths.DATA_ROOT = mnist.ensure_mnist(progress=progress)
    say(f"Using the bundled MNIST in {paths.DATA_ROOT}")


def copy_weights(solver: Solver, paths: str) -> None:
    """`--weights a,b`: copy each file's layers into the train net and every test net."""
    from proto import binaryio

    for path in paths.split(","):
        weights = binaryio.read_caffemodel(path)
        for net in [solver.net, *solver.test_nets]:
            net.copy_trained_layers_from(weights)


def run(args: argparse.Namespace) -> int:
    if args.gpu:
        backend.set_mode_gpu()
    param = read_solver(args.solver)
    say = glog.printer("solver.cpp:0")
    say(f"Using {'GPU' if args.gpu else 'CPU'}")
    provide_bundled_mnist(solver_nets(param), say)
    try:
        solver = create_solver(param, log_fn=say)
    except EngineError:
        raise
    if args.weights:
        copy_weights(solver, args.weights)
    say("Starting Optimization")
    solver.solve(args.snapshot)
    return 0
