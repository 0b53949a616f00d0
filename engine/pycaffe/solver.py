"""pycaffe's Solver classes: ``get_solver(path)``, ``SGDSolver(path)``, ... with .net, .test_nets, .step."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from engine import pymodules, solvers
from engine.pycaffe.net import Net
from engine.solvers.base import Solver as EngineSolver
from proto import caffe_pb2


def _read_solver(path: str) -> caffe_pb2.SolverParameter:
    from engine.cli.train import read_solver  # net paths: the working directory, then the solver's folder

    return read_solver(path)


class _Callback:
    def __init__(self, on_start: Callable[[], None], on_gradients_ready: Callable[[], None]) -> None:
        self.on_start = on_start
        self.on_gradients_ready = on_gradients_ready


class NCCL:
    """pycaffe's NCCL(solver, uid) as a Caffe built without NCCL has it: it holds nothing and does nothing.

    ``has_nccl()`` is False here (one process runs one solver), so scripts that test it never reach
    ``new_uid``/``bcast``; ``solver.add_callback(nccl)`` is accepted and adds nothing.
    """

    def __init__(self, solver: Solver, uid: str) -> None:
        self.solver = solver
        self.uid = uid


class Solver:
    """A solver as pycaffe shows it; its nets are pycaffe Nets whose arrays stay valid across steps."""

    solver_type: str | None = None  # set by the per-type classes below; None: the file's `type`

    def __init__(self, solver_file: str | caffe_pb2.SolverParameter) -> None:
        if isinstance(solver_file, caffe_pb2.SolverParameter):
            param, file = solver_file, None
        else:
            param, file = _read_solver(solver_file), str(solver_file)
        if self.solver_type is not None:
            param.type = self.solver_type
        with pymodules.for_solver(param, file):
            self._solver = solvers.create_solver(param)
        self._net = Net.around(self._solver.net)
        self._test_nets = [Net.around(n) for n in self._solver.test_nets]

    @contextlib.contextmanager
    def _synced(self) -> Iterator[None]:
        """The arrays handed out by every net of the solver, synced around a run of the engine."""
        with contextlib.ExitStack() as stack:
            for net in [self._net, *self._test_nets]:
                stack.enter_context(net.synced())
            yield

    def _run(self, action: Callable[[], Any]) -> Any:
        with self._synced():
            return action()

    @property
    def net(self) -> Net:
        return self._net

    @property
    def test_nets(self) -> list[Net]:
        return list(self._test_nets)

    @property
    def iter(self) -> int:
        return self._solver.iter

    @property
    def param(self) -> caffe_pb2.SolverParameter:
        copy = caffe_pb2.SolverParameter()
        copy.CopyFrom(self._solver.param)
        return copy

    def step(self, iters: int) -> None:
        self._run(lambda: self._solver.step(int(iters)))

    def solve(self, resume_file: str | None = None) -> None:
        self._run(lambda: self._solver.solve(resume_file))

    def restore(self, state_file: str) -> None:
        self._run(lambda: self._solver.restore(state_file))

    def snapshot(self) -> None:
        self._run(self._solver.snapshot)

    def apply_update(self) -> None:
        self._run(self._solver.apply_update)

    def share_weights(self, net: Net) -> None:
        """Make ``net`` use this solver's train-net weights (pycaffe's share_weights)."""
        net.core.share_trained_layers_with(self._solver.net)

    def add_callback(
        self, on_start: Callable[[], None] | NCCL, on_gradients_ready: Callable[[], None] | None = None
    ) -> None:
        """``add_callback(on_start, on_gradients_ready)``, or pycaffe's ``add_callback(nccl)`` overload."""
        if isinstance(on_start, NCCL):
            return
        if on_gradients_ready is None:
            raise TypeError("add_callback(on_start, on_gradients_ready) takes two callables, or one NCCL")
        self._solver.callbacks.append(_Callback(on_start, on_gradients_ready))

    @property
    def core(self) -> EngineSolver:
        """The engine solver underneath (not part of pycaffe)."""
        return self._solver


def get_solver(solver_file: str) -> Solver:
    """The solver of the file's `type` (SGD when unset), as caffe.get_solver."""
    return Solver(solver_file)


def _typed(name: str, type_name: str) -> type[Solver]:
    return type(
        name, (Solver,), {"solver_type": type_name, "__doc__": f"pycaffe's {name}: a {type_name} solver."}
    )


SGDSolver = _typed("SGDSolver", "SGD")
NesterovSolver = _typed("NesterovSolver", "Nesterov")
AdaGradSolver = _typed("AdaGradSolver", "AdaGrad")
RMSPropSolver = _typed("RMSPropSolver", "RMSProp")
AdaDeltaSolver = _typed("AdaDeltaSolver", "AdaDelta")
AdamSolver = _typed("AdamSolver", "Adam")
