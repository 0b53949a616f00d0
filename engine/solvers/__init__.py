"""Caffe's solvers, registered by their SolverParameter `type` strings."""

from typing import Any

from engine.solvers import rules  # noqa: F401 - registers the update rules
from engine.solvers.base import Solver
from engine.solvers.registry import register_solver, solver_class, solver_types
from proto import caffe_pb2, upgrade


def create_solver(param: caffe_pb2.SolverParameter, **kwargs: Any) -> Solver:
    """Build the solver a SolverParameter names, the deprecated ``solver_type`` enum upgraded to
    ``type`` first (as Caffe's solver reader does; both at once is an error)."""
    if upgrade.solver_needs_upgrade(param):
        param = upgrade.upgrade_solver_as_needed(param)
    return solver_class(param.type)(param, **kwargs)


__all__ = ["Solver", "create_solver", "register_solver", "solver_class", "solver_types"]
