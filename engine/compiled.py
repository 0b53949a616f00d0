"""Opening the engine's optional compiled libraries (engine/native/*.c, built by setup.py).

Each is a C file with no Python functions of its own: Python finds it as a module of the engine
package and opens it with ctypes, which lets go of the GIL for each call, so the engine's threads
run its kernels side by side. A library is not used where it was not built (no C compiler at
install), where its ABI number is not the one its Python side was written for (a stale build), or
where its environment knob is "0" (to compare against the numpy path).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from typing import Any

POINTER, INDEX = ctypes.c_void_p, ctypes.c_int64


def load(
    module: str, abi_function: str, abi: int, knob: str, signatures: dict[str, tuple[Any, list[Any]]]
) -> Any:
    """The library ``module`` (e.g. "engine._direct_conv") with the argument types of ``signatures``
    (name: (result type, argument types)) set; None where it is not to be used."""
    if os.environ.get(knob, "1") == "0":
        return None
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return None
    try:
        lib = ctypes.CDLL(spec.origin)
        version = getattr(lib, abi_function)
        version.restype = INDEX
        if version() != abi:
            return None
        for name, (result, arguments) in signatures.items():
            function = getattr(lib, name)
            function.restype, function.argtypes = result, arguments
    except (OSError, AttributeError):
        return None
    return lib


def kernel_name(lib: Any, function: str) -> str:
    """The instruction set ``lib`` runs its kernels with ("avx512", "avx2", "baseline"), as its
    ``function`` says; "" where it is not loaded."""
    return getattr(lib, function)().decode() if lib is not None else ""


def select(lib: Any, function: str, name: str) -> bool:
    """Have ``lib`` run the kernels of that instruction set from now on (its ``function``, e.g.
    "dc_select"); False where it is not loaded or this CPU cannot run them (tests)."""
    return lib is not None and bool(getattr(lib, function)(name.encode()))
