"""A solver's snapshots, in Caffe's two formats, and restoring from them.

BINARYPROTO writes PREFIX_iter_N.caffemodel (a NetParameter) and PREFIX_iter_N.solverstate (a
SolverState); HDF5 writes PREFIX_iter_N.caffemodel.h5 and .solverstate.h5 in the layouts of
proto.hdf5io. Both states hold the iteration, the weights file's name (learned_net), the multistep
position (current_step) and the history blobs in the rule's order (every parameter's first history
blob, then every parameter's second, for AdaDelta and Adam).
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from engine import backend
from engine.blob import Blob
from engine.errors import EngineError
from engine.net import Net
from engine.weights import copy_trained_layers_from_file, write_net_hdf5
from proto import binaryio, caffe_pb2
from proto.inputs import check_regular


class Solver(Protocol):
    """What snapshots read and restore of a solver (engine/solvers/base.py's Solver)."""

    param: caffe_pb2.SolverParameter
    net: Net
    history: list[Blob]
    iter: int
    current_step: int
    xp: ModuleType

    @property
    def type(self) -> str: ...

    @property
    def history_per_param(self) -> int: ...

    def say(self, message: str) -> None: ...

    def snapshot_filename(self, extension: str) -> str: ...


def save(solver: Solver) -> tuple[str, str]:
    """Write the weights and the state as snapshot_format says; returns both paths."""
    p = solver.param
    if p.snapshot_format == caffe_pb2.SolverParameter.HDF5:
        from proto import hdf5io  # only HDF5 snapshots load h5py (and its libraries, ~10 MB resident)

        model = solver.snapshot_filename(".caffemodel.h5")
        solver.say(f"Snapshotting to HDF5 file {model}")
        write_net_hdf5(solver.net, model, write_diff=p.snapshot_diff)
        state_file = solver.snapshot_filename(".solverstate.h5")
        solver.say(f"Snapshotting solver state to HDF5 file {state_file}")
        history = [backend.to_host(b.data) for b in solver.history]
        hdf5io.write_solverstate(
            state_file, hdf5io.SolverStateH5(solver.iter, solver.current_step, model, history)
        )
        return model, state_file
    model = solver.snapshot_filename(".caffemodel")
    solver.say(f"Snapshotting to binary proto file {model}")
    binaryio.write_caffemodel(model, solver.net.to_proto(write_diff=p.snapshot_diff))
    state = caffe_pb2.SolverState(iter=solver.iter, learned_net=model, current_step=solver.current_step)
    for blob in solver.history:
        state.history.append(blob.to_proto())
    state_file = solver.snapshot_filename(".solverstate")
    solver.say(f"Snapshotting solver state to binary proto file {state_file}")
    binaryio.write_solverstate(state_file, state)
    return model, state_file


def load(solver: Solver, state_file: str) -> None:
    """Restore iter, current_step, the learned weights and the history from a state file.

    The learned_net it names is read by content (HDF5 or binary); when it is not where the state
    says, it is looked for beside the state file (a snapshot folder that was moved). The whole state
    is checked against this solver's net first (iter and current_step not negative, as many history
    blobs as the solver keeps, each of its parameter's shape with a value for every element, the
    learned_net a regular file whose layers fit), so a bad state is one error naming the file and
    leaves the solver as it was.
    """
    history: list[Any]
    hdf5 = state_file.endswith(".h5")
    if hdf5:
        from proto import hdf5io

        h5 = hdf5io.read_solverstate(state_file)
        iteration, learned, current_step, history = h5.iter, h5.learned_net, h5.current_step, h5.history
    else:
        state = binaryio.read_solverstate(state_file)
        iteration, current_step = state.iter, state.current_step
        learned = state.learned_net if state.HasField("learned_net") else None
        history = list(state.history)
    for name, value in (("iter", iteration), ("current_step", current_step)):
        if value < 0:
            raise EngineError(f"{state_file}: {name} is {value}; it cannot be negative")
    if len(history) != len(solver.history):
        raise EngineError(
            f"{state_file}: Incorrect length of history blobs "
            f"({len(history)} in the file, {solver.type} keeps {len(solver.history)})"
        )
    names = _param_names(solver)
    for i, (blob, saved) in enumerate(zip(solver.history, history)):
        problem = _history_problem(blob, saved)
        if problem:
            raise EngineError(f"{state_file}: history blob {i} (of {names[i]}, shape {blob.shape}) {problem}")
    if learned:
        if not os.path.exists(learned):
            learned = os.path.join(os.path.dirname(state_file), os.path.basename(learned))
        try:
            check_regular(learned)
        except OSError as exc:
            raise EngineError(f"{state_file}: its learned_net {learned}: {exc.strerror}") from exc
        try:
            copy_trained_layers_from_file(solver.net, learned)  # checks every layer before it copies
        except EngineError as exc:
            raise EngineError(f"{state_file}: its learned_net {learned}: {exc}") from exc
    solver.iter = iteration
    solver.current_step = current_step
    if not hdf5:
        solver.say("SGDSolver: restoring history")  # Caffe's words, whatever the rule
    for blob, saved in zip(solver.history, history):
        if isinstance(saved, caffe_pb2.BlobProto):
            values = saved.double_data if len(saved.double_data) else saved.data
        else:
            values = saved
        blob.data[...] = solver.xp.asarray(np.asarray(values, blob.dtype).reshape(blob.shape))


def _history_problem(blob: Any, saved: Any) -> str | None:
    """Why a saved history blob cannot be its parameter's history (None when it can)."""
    if isinstance(saved, caffe_pb2.BlobProto):
        if not blob.shape_equals(saved):
            legacy = any(saved.HasField(f) for f in ("num", "channels", "height", "width"))
            dims = (
                (saved.num, saved.channels, saved.height, saved.width) if legacy else tuple(saved.shape.dim)
            )
            return f"has shape {dims}"
        count = len(saved.double_data) or len(saved.data)
    else:
        if saved.size != blob.count():
            return f"has shape {saved.shape}"
        count = saved.size
    if count != blob.count():
        return f"holds {count} values for its {blob.count()}"
    return None


def _param_names(solver: Solver) -> list[str]:
    """For each history blob, the parameter it belongs to ("layer 'ip1' param 0")."""
    net = solver.net
    names = [""] * len(net.learnable_params)
    for param_id, learnable in enumerate(net.learnable_param_ids):
        if not names[learnable]:
            layer_id, j = net.param_layer_indices[param_id]
            names[learnable] = f"layer '{net.layer_names[layer_id]}' param {j}"
    return names * solver.history_per_param
