"""A small Caffe in Python: numpy on the CPU, cupy on a GPU, no Qt.

``import engine as caffe`` gives pycaffe's surface: Net, TRAIN/TEST, set_mode_cpu/gpu,
set_device, set_random_seed, layer_type_list, get_solver and the per-type Solver classes.
"""

import proto  # `caffe.proto.caffe_pb2`, as pycaffe scripts spell it
from engine import io
from engine.backend import set_device, set_mode_cpu, set_mode_gpu
from engine.layers import layer_types as layer_type_list
from engine.pycaffe import (
    TEST,
    TRAIN,
    Blob,
    Layer,
    Net,
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

__version__ = "1.0.0"  # the Caffe version whose behaviour the engine follows

__all__ = [
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
