"""Solvers registered under their SolverParameter `type` strings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.errors import UnknownTypeError

if TYPE_CHECKING:
    from engine.solvers.base import Solver

_SOLVERS: dict[str, type[Solver]] = {}


def register_solver(type_name: str) -> Callable[[type[Solver]], type[Solver]]:
    def decorate(cls: type[Solver]) -> type[Solver]:
        cls.type = type_name
        _SOLVERS[type_name] = cls
        return cls

    return decorate


def solver_class(type_name: str) -> type[Solver]:
    try:
        return _SOLVERS[type_name]
    except KeyError:
        known = ", ".join(sorted(_SOLVERS))
        raise UnknownTypeError(f"Unknown solver type: '{type_name}' (known types: {known})") from None


def solver_types() -> list[str]:
    return sorted(_SOLVERS)
