"""`main.py train --solver S [--weights A,B | --snapshot X] [--gpu G] [--stage S] [--level N]`,
run and logged as Caffe 1.0's `caffe train`.

The order is Caffe's: read the solver, put --level and --stage into its train_state, pick the
device (--gpu, else the solver's solver_mode/device_id), install the SIGINT/SIGHUP handler, build
the solver, restore the snapshot or copy the weights, solve, and log "Optimization Done." (the
solver logs it too, so it appears twice, as in Caffe). A stop by signal snapshots where Caffe does
(snapshot_after_train, unless the last iteration was just snapshotted) and exits with 0.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable

from engine import backend, pymodules, relative_paths
from engine.cli import common, glog
from engine.cli.signals import SignalHandler
from engine.data.bundled import bundled_mnist_for
from engine.data.paths import DataPaths
from engine.net import Net
from engine.solvers import Solver, create_solver
from proto import atomic, caffe_pb2

say = glog.tool_printer(210)


def resolve(path: str, beside: str, what: str = "net") -> str:
    """Caffe resolves against the working directory; then the folder of the file naming it and each
    folder above it (BVLC's solvers name their nets from the Caffe root). Says which it used;
    a path found nowhere is one line naming every place tried."""
    found = relative_paths.find_or_explain(path, beside, what, cwd_first=True)
    if found.base is not None:
        say(found.note(what))
    return str(found.path) if found.base is not None else path


def read_solver(path: str) -> caffe_pb2.SolverParameter:
    from proto import textio

    param = textio.read_solver(path)
    for field in ("net", "train_net"):
        if param.HasField(field):
            setattr(param, field, resolve(getattr(param, field), path, field))
    param.test_net[:] = [resolve(p, path, "test_net") for p in param.test_net]
    if not param.snapshot_prefix:  # Caffe master: default to the solver file's name
        param.snapshot_prefix = os.path.splitext(path)[0]
    else:
        param.snapshot_prefix = _snapshot_prefix(param.snapshot_prefix, path)
    return param


def _snapshot_prefix(prefix: str, solver_path: str) -> str:
    """A relative prefix whose folder is not under the working directory goes where the net was
    found: the first folder at or above the solver's that has it (the Caffe root)."""
    folder = os.path.dirname(prefix)
    if not folder or os.path.isabs(prefix) or os.path.isdir(folder):
        return prefix
    found = relative_paths.find(folder, solver_path, folder=True)
    if found is None or found.base is None:
        return prefix
    say(found.note("snapshot_prefix folder"))
    return os.path.join(found.path, os.path.basename(prefix))


def solver_nets(param: caffe_pb2.SolverParameter) -> list[caffe_pb2.NetParameter]:
    from proto import textio

    paths = [param.net, param.train_net, *param.test_net]
    inline = [param.net_param, param.train_net_param, *param.test_net_param]
    return [textio.read_net(p) for p in paths if p and os.path.exists(p)] + [n for n in inline if n.layer]


def bundled_data(
    nets: Iterable[caffe_pb2.NetParameter], data_paths: DataPaths, say: Callable[[str], None]
) -> DataPaths:
    """``data_paths``, with the bundled MNIST as the data root when a net reads Caffe's MNIST LMDBs
    and they are not where it says."""

    def progress(done: int, total: int, what: str) -> None:
        if done == total or done % 10000 == 0:
            say(f"Preparing the bundled MNIST: {what} {done}/{total}")

    folder = bundled_mnist_for(nets, data_paths, progress)
    if folder is None:
        return data_paths
    say(f"Using the bundled MNIST in {folder}")
    return data_paths.with_root(folder)


def data_beside(param: caffe_pb2.SolverParameter, solver_path: str | None = None) -> DataPaths:
    """Relative data sources (and root_folders) not under the working directory are looked for
    beside each net file and the solver file and in the folders above them, as its ``net:`` path
    was: the rule the window follows too (engine/data/paths.py)."""
    return DataPaths.beside(*(param.net, param.train_net, *param.test_net), solver_path)


def weight_files(flag: str) -> list[str]:
    """`--weights a,b`: the files, in order (Caffe splits on ',' and copies each in turn)."""
    return flag.split(",")


def copy_weights(solver: Solver, weights: list[tuple[str, Callable[[Net], None]]]) -> None:
    """Copy each file's layers into the train net and every test net, the later files winning."""
    for path, copy in weights:
        say(f"Finetuning from {path}")
        for net in [solver.net, *solver.test_nets]:
            copy(net)


def check_inputs(args: argparse.Namespace, param: caffe_pb2.SolverParameter) -> None:
    """Refuse missing files and an unwritable snapshot folder before anything is built or logged."""
    for field in ("net", "train_net"):
        if param.HasField(field):
            common.require_file(getattr(param, field), f"{args.solver}: {field}")
    for path in param.test_net:
        common.require_file(path, f"{args.solver}: test_net")
    if args.snapshot:
        common.require_file(args.snapshot, "--snapshot")
    if param.snapshot or param.snapshot_after_train:
        folder = os.path.dirname(param.snapshot_prefix) or "."
        try:  # by creating a file there: os.access says yes to root, and under /proc
            atomic.check_folder_writable(folder, param.snapshot_prefix)
        except atomic.WriteError as exc:
            raise common.CliError(
                f"Cannot write to snapshot prefix '{param.snapshot_prefix}'. "
                f"Make sure that the directory exists and is writeable ({exc.strerror})."
            ) from None


def choose_device(args: argparse.Namespace, param: caffe_pb2.SolverParameter) -> list[int]:
    """--gpu, else a solver that sets solver_mode: GPU (its device_id, or 0); [] is the CPU.

    Where the solver asks for a GPU and none is usable here, train on the CPU and say so (Caffe
    built without CUDA would refuse); an explicit --gpu without a GPU is refused.
    """
    flag = args.gpu
    if not flag and param.HasField("solver_mode") and param.solver_mode == caffe_pb2.SolverParameter.GPU:
        flag = str(param.device_id)
        reason = backend.gpu_unavailable_reason()
        if reason:
            glog.warning(f"The solver asks for GPU {flag} (solver_mode: GPU) but {reason}; using the CPU.")
            return []
    return common.parse_gpus(flag)


def run(args: argparse.Namespace) -> int:
    if not args.solver:
        raise common.CliError("Need a solver definition to train.")
    if args.snapshot and args.weights:
        raise common.CliError("Give a snapshot to resume training or weights to finetune but not both.")
    stages = common.stages_from_flags(args.stage)
    common.require_file(args.solver, "--solver")
    param = read_solver(args.solver)
    param.train_state.level = args.level
    param.train_state.stage.extend(stages)
    if args.snapshot or args.weights:  # the flags replace the solver's own `weights`, as caffe.cpp does
        param.ClearField("weights")
    check_inputs(args, param)
    nets = solver_nets(param)  # read here, so a bad net is refused before anything is logged
    weights = (
        [(path, common.read_weights(path)) for path in weight_files(args.weights)] if args.weights else []
    )
    gpus = choose_device(args, param)
    handler = SignalHandler(args.sigint_effect, args.sighup_effect)
    if not gpus:
        say("Use CPU.")
        backend.set_mode_cpu()
    else:
        say(f"Using GPUs {', '.join(map(str, gpus))}")
        for device in gpus:
            say(f"GPU {device}: {common.device_properties(device)['name']}")
        if len(gpus) > 1:
            glog.warning(f"One GPU trains here (no multi-GPU data parallelism): using GPU {gpus[0]} only.")
        param.device_id = gpus[0]
        common.set_device(gpus[0])
    data_paths = bundled_data(nets, data_beside(param, args.solver), say)
    files = [args.solver, param.net, param.train_net, *param.test_net]
    with handler, pymodules.for_nets(files, nets):
        solver = create_solver(param, log_fn=glog.solver_printer, data_paths=data_paths)
        try:
            solver.action = handler.action
            if args.snapshot:
                say(f"Resuming from {args.snapshot}")
                solver.restore(args.snapshot)
            elif weights:
                copy_weights(solver, weights)
            say("Starting Optimization")
            solver.solve()
        finally:
            solver.close()
    say("Optimization Done.")
    return 0
