"""Importing a Python layer's module: whether it may run, and what it may not be named.

Importing ``python_param.module`` runs its code, so two rules guard it (``PythonLayer`` calls
``import_module`` and nothing else imports a layer's module):

* **Trust** (the app). ``require_trust(folders)`` turns the gate on: a Python layer is then set
  up only when every folder of the net being built (``pymodules.importing_from``) is one of
  ``folders``; otherwise nothing is imported and the layer fails with ``NotTrusted`` ("Python
  layer: not run", naming the module and the folder). ``require_trust(None)``, the default, is
  the CLI and pycaffe: the user ran the net, as with Caffe.
* **Clashes** (everywhere). The module's top-level name may not be Python's standard library
  (``this``, ``os``), one of our packages (``engine``, ``proto``, ``app``, ``graph_view``,
  ``main``, ``caffe``), an installed package that is already loaded (``numpy``, ``threadpoolctl``),
  or a file beside the net that something else of that name would hide (the net's folder comes
  last on ``sys.path``). Such a layer is refused with ``ModuleClash``, naming the layer's module
  and what it clashes with; nothing is imported and ``sys.modules`` is left as it was.

What remains is imported as Caffe would: from the normal ``sys.path`` (PYTHONPATH, installed
packages) or, failing that, from the net's folder. Modules a layer imported once may be used by
later nets (and are re-imported from another folder's file of that name, see ``pymodules``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import sysconfig
from collections.abc import Iterable
from types import ModuleType

from engine import pymodules
from engine.errors import EngineError
from engine.trust_gate import allowed, gated, require_trust, untrusted

__all__ = ["ModuleClash", "NotTrusted", "allowed", "gated", "import_module", "require_trust", "untrusted"]

OURS = frozenset({"engine", "proto", "app", "graph_view", "main", "caffe"})


class NotTrusted(EngineError, ImportError):
    """The net's folder is not trusted: its Python layer's module was not imported."""


class ModuleClash(EngineError, ImportError):
    """The layer's module is named like something that is not the net's own code."""


def _installed_roots() -> list[str]:
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return sorted(os.path.realpath(r) for r in roots)


def _inside(path: str, roots: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root + os.sep) for root in roots)


def _origin(module: ModuleType | None) -> str | None:
    file = getattr(module, "__file__", None)
    if file:
        return os.path.abspath(file)
    paths = list(getattr(module, "__path__", []) or [])
    return os.path.abspath(paths[0]) if paths else None


def _clash(top: str, where: list[str]) -> str | None:
    """What the top-level name ``top`` clashes with, in words; None when it may be imported."""
    if top in sys.builtin_module_names or top in sys.stdlib_module_names:
        return f"Python's standard module '{top}'"
    if top in OURS:
        where_ours = _origin(sys.modules.get(top)) or "Barista"
        return f"Barista's own package '{top}' ({where_ours})"
    local = pymodules.module_file(top, where)
    loaded = sys.modules.get(top)
    if loaded is not None:
        origin = _origin(loaded)
        if top in pymodules.imported or (local is not None and origin == os.path.abspath(local)):
            return None  # a layer's module imported before (or this very file)
        installed = origin is None or _inside(origin, _installed_roots())
        if local is None and not installed:
            return None  # the user's own, imported by their script from their folders
        kind = "installed module" if installed else "module"
        return f"the {kind} '{top}' already loaded from {origin or 'a built-in'}"
    if local is None:
        return None
    try:
        spec = importlib.util.find_spec(top)  # finds, runs nothing (a top-level name has no parent)
    except (ImportError, ValueError):
        return None
    found = spec.origin if spec is not None else None
    if found and found not in ("built-in", "frozen") and os.path.abspath(found) != os.path.abspath(local):
        return f"the installed module '{top}' at {found}, which would hide {local}"
    return None


def import_module(name: str) -> ModuleType:
    """Import the Python layer module ``name`` for the net being built, or refuse (see the module doc)."""
    where = list(pymodules.current_folders())
    top = name.split(".")[0]
    if gated():
        refused = untrusted(where)
        if not where:
            raise NotTrusted(
                f"Python layer: not run (module '{name}'): the net is not saved; "
                f"{pymodules.missing_hint(name, [])}, then trust that folder"
            )
        if refused:
            raise NotTrusted(
                f"Python layer: not run (module '{name}' of {', '.join(refused)}, a folder not trusted yet)"
            )
    clash = _clash(top, where)
    if clash is not None:
        raise ModuleClash(
            f"module '{name}' (python_param.module) clashes with {clash}: rename the layer's module"
        )
    module = importlib.import_module(name)
    pymodules.imported.setdefault(top, _origin(sys.modules.get(top)))
    return module
