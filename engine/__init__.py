"""A small Caffe in Python: numpy on the CPU, cupy on a GPU, no Qt.

``import engine as caffe`` gives pycaffe's surface: Net, TRAIN/TEST, set_mode_cpu/gpu,
set_device, set_random_seed, layer_type_list, get_solver and the per-type Solver classes,
net specification (NetSpec, layers, params, to_proto), coord_map, Classifier and Detector.

That surface is loaded lazily (PEP 562): ``import engine.net`` runs only this file's few lines,
and a name such as ``caffe.Net`` imports its module on first use. ``caffe.layers`` is this
package's layer implementations, which also serve as pycaffe's net-spec factory
(``L.Convolution(...)``; see engine/layers/__init__.py). pycaffe's ``caffe.proto`` subpackage is
our top-level ``proto`` package, registered as ``engine.proto`` too so that
``from engine.proto import caffe_pb2`` works.
"""

import importlib
import sys
from typing import Any

import proto  # `caffe.proto.caffe_pb2`, as pycaffe scripts spell it
import proto.caffe_pb2
from engine.pycaffe import SURFACE

# `import engine.proto` / `from engine.proto import caffe_pb2` find the very same module objects.
sys.modules.setdefault(f"{__name__}.proto", proto)
sys.modules.setdefault(f"{__name__}.proto.caffe_pb2", proto.caffe_pb2)

__version__ = "1.0.0"  # the Caffe version whose behaviour the engine follows

# name -> (module, attribute in it; None: the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "coord_map": ("engine.pycaffe.coord_map", None),
    "io": ("engine.pycaffe.io", None),
    "layers": ("engine.layers", None),
    "net_spec": ("engine.pycaffe.net_spec", None),
    "layer_type_list": ("engine.layers", "layer_types"),
    "set_device": ("engine.backend", "set_device"),
    "set_mode_cpu": ("engine.backend", "set_mode_cpu"),
    "set_mode_gpu": ("engine.backend", "set_mode_gpu"),
    "set_random_seed": ("engine.rng", "set_random_seed"),
    "Classifier": ("engine.pycaffe.classifier", "Classifier"),
    "Detector": ("engine.pycaffe.detector", "Detector"),
    **{name: ("engine.pycaffe.net_spec", name) for name in ("NetSpec", "params", "to_proto")},
    **{name: ("engine.pycaffe", name) for name in SURFACE},
}

__all__ = ["proto", *_LAZY]


def __getattr__(name: str) -> Any:
    """The pycaffe surface, imported on first use (and kept, so the next use is a plain lookup)."""
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
