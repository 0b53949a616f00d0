"""A small Caffe in Python: numpy on the CPU, cupy on a GPU, no Qt.

``import engine as caffe`` gives pycaffe's surface: Net, TRAIN/TEST, set_mode_cpu/gpu,
set_device, set_random_seed, layer_type_list, get_solver and the per-type Solver classes.
"""

from engine.backend import set_device, set_mode_cpu, set_mode_gpu
from engine.layers import layer_types as layer_type_list
from engine.pycaffe import TEST, TRAIN, Blob, Layer, Net
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
