"""Caffe's solvers, registered by their SolverParameter `type` strings."""

from engine.solvers import rules  # noqa: F401 - registers the update rules
from engine.solvers.base import Solver
from engine.solvers.registry import register_solver, solver_class, solver_types


def create_solver(param, **kwargs) -> Solver:  # type: ignore[no-untyped-def]
    """Build the solver a SolverParameter names (after the legacy solver_type upgrade)."""
    return solver_class(param.type)(param, **kwargs)


__all__ = ["Solver", "create_solver", "register_solver", "solver_class", "solver_types"]
