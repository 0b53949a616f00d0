"""A small Caffe in Python: numpy on the CPU, cupy on a GPU, no Qt.

``import engine as caffe`` gives pycaffe's surface: Net, TRAIN/TEST, set_mode_cpu/gpu,
set_device, set_random_seed, layer_type_list, get_solver and the per-type Solver classes,
net specification (NetSpec, layers, params, to_proto), coord_map, Classifier and Detector.

``caffe.layers`` is this package's layer implementations, which also serve as pycaffe's net-spec
factory (``L.Convolution(...)``; see engine/layers/__init__.py). pycaffe's ``caffe.proto``
subpackage is our top-level ``proto`` package, registered as ``engine.proto`` too so that
``from engine.proto import caffe_pb2`` works.
"""

import sys

import proto  # `caffe.proto.caffe_pb2`, as pycaffe scripts spell it
import proto.caffe_pb2
from engine import coord_map, io, layers, net_spec
from engine.backend import set_device, set_mode_cpu, set_mode_gpu
from engine.classifier import Classifier
from engine.detector import Detector
from engine.layers import layer_types as layer_type_list
from engine.net_spec import NetSpec, params, to_proto
from engine.pycaffe import (
    TEST,
    TRAIN,
    Blob,
    Layer,
    Net,
    Timer,
    has_nccl,
    init_log,
    log,
    set_multiprocess,
    set_solver_count,
    set_solver_rank,
    solver_count,
    solver_rank,
)
from engine.pycaffe_solver import (
    NCCL,
    AdaDeltaSolver,
    AdaGradSolver,
    AdamSolver,
    NesterovSolver,
    RMSPropSolver,
    SGDSolver,
    Solver,
    get_solver,
)
from engine.rng import set_random_seed

# `import engine.proto` / `from engine.proto import caffe_pb2` find the very same module objects.
sys.modules.setdefault(f"{__name__}.proto", proto)
sys.modules.setdefault(f"{__name__}.proto.caffe_pb2", proto.caffe_pb2)

__version__ = "1.0.0"  # the Caffe version whose behaviour the engine follows

__all__ = [
    "Classifier",
    "NCCL",
    "Timer",
    "Detector",
    "NetSpec",
    "coord_map",
    "layers",
    "net_spec",
    "params",
    "to_proto",
    "AdaDeltaSolver",
    "AdaGradSolver",
    "AdamSolver",
    "NesterovSolver",
    "RMSPropSolver",
    "SGDSolver",
    "Solver",
    "get_solver",
    "has_nccl",
    "init_log",
    "io",
    "log",
    "proto",
    "set_multiprocess",
    "set_solver_count",
    "set_solver_rank",
    "solver_count",
    "solver_rank",
    "TEST",
    "TRAIN",
    "Blob",
    "Layer",
    "Net",
    "layer_type_list",
    "set_device",
    "set_mode_cpu",
    "set_mode_gpu",
    "set_random_seed",
]
