"""pycaffe's surface, built on the engine's own classes: ``import engine as caffe`` reaches it.

One module a part: ``net`` (Net, TRAIN/TEST), ``blob`` (Blob, BlobVec), ``layer`` (Layer, the base
of Python layers), ``layer_view`` (built-in layers in ``net.layers``), ``batches`` (forward_all),
``solver`` (Solver, SGDSolver ..., get_solver), ``timer``, ``process`` (logging, solver counts),
``host_copies`` (numpy copies of device arrays), ``files`` (pycaffe's file checks), and pycaffe's
own modules ``io``, ``net_spec``, ``coord_map``, ``classifier`` and ``detector`` (reached as
``caffe.io``, ``caffe.NetSpec``, ``caffe.Classifier`` ... through engine/__init__.py).

Names load on first use (PEP 562), so the engine's Python layer can import ``blob``, ``layer`` and
``host_copies`` (which import no net) without loading the Net or the Solver.
"""

import importlib
from typing import Any

# name -> the module of this package that defines it
SURFACE: dict[str, str] = {
    "TEST": "net",
    "TRAIN": "net",
    "Net": "net",
    "Blob": "blob",
    "Layer": "layer",
    "Timer": "timer",
    **{
        name: "process"
        for name in (
            "has_nccl",
            "init_log",
            "log",
            "set_multiprocess",
            "set_solver_count",
            "set_solver_rank",
            "solver_count",
            "solver_rank",
        )
    },
    **{
        name: "solver"
        for name in (
            "NCCL",
            "AdaDeltaSolver",
            "AdaGradSolver",
            "AdamSolver",
            "NesterovSolver",
            "RMSPropSolver",
            "SGDSolver",
            "Solver",
            "get_solver",
        )
    },
}

__all__ = list(SURFACE)


def __getattr__(name: str) -> Any:
    """A name of the surface, imported from its module on first use (and kept)."""
    try:
        module_name = SURFACE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *SURFACE})
