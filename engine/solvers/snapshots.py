"""A solver's snapshots, in Caffe's two formats, and restoring from them.

BINARYPROTO writes PREFIX_iter_N.caffemodel (a NetParameter) and PREFIX_iter_N.solverstate (a
SolverState); HDF5 writes PREFIX_iter_N.caffemodel.h5 and .solverstate.h5 in the layouts of
proto.hdf5io. Both states hold the iteration, the weights file's name (learned_net), the multistep
position (current_step) and the history blobs in the rule's order (every parameter's first history
blob, then every parameter's second, for AdaDelta and Adam).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from engine import backend
from engine.errors import EngineError
from engine.weights import copy_trained_layers_from_file, write_net_hdf5
from proto import binaryio, caffe_pb2, hdf5io

if TYPE_CHECKING:
    from engine.solvers.base import Solver


def save(solver: Solver) -> tuple[str, str]:
    """Write the weights and the state as snapshot_format says; returns both paths."""
    p = solver.param
    if p.snapshot_format == caffe_pb2.SolverParameter.HDF5:
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
    says, it is looked for beside the state file (a snapshot folder that was moved).
    """
    history: list[Any]
    hdf5 = state_file.endswith(".h5")
    if hdf5:
        h5 = hdf5io.read_solverstate(state_file)
        iteration, learned, current_step, history = h5.iter, h5.learned_net, h5.current_step, h5.history
    else:
        state = binaryio.read_solverstate(state_file)
        iteration, current_step = state.iter, state.current_step
        learned = state.learned_net if state.HasField("learned_net") else None
        history = list(state.history)
    if len(history) != len(solver.history):
        raise EngineError(
            f"{state_file}: Incorrect length of history blobs "
            f"({len(history)} in the file, {solver.type} keeps {len(solver.history)})"
        )
    solver.iter = iteration
    if learned:
        if not os.path.exists(learned):
            learned = os.path.join(os.path.dirname(state_file), os.path.basename(learned))
        copy_trained_layers_from_file(solver.net, learned)
    solver.current_step = current_step
    if not hdf5:
        solver.say("SGDSolver: restoring history")  # Caffe's words, whatever the rule
    for i, (blob, saved) in enumerate(zip(solver.history, history)):
        if isinstance(saved, caffe_pb2.BlobProto):
            blob.from_proto(saved)
            continue
        if saved.size != blob.count():
            raise EngineError(
                f"{state_file}: history blob {i} has shape {saved.shape}, the parameter {blob.shape}"
            )
        blob.reshape(saved.shape)
        blob.data[...] = solver.xp.asarray(saved.astype(blob.dtype, copy=False))
