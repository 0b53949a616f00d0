"""LeNet on the bundled MNIST for the initialisation-experiment tests (engine and CLI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.data import mnist
from engine.data.paths import DataPaths
from proto import caffe_pb2

REPO = Path(__file__).resolve().parents[2]
LENET_SOLVER = REPO / "resources" / "examples" / "mnist" / "lenet_solver.prototxt"


@pytest.fixture(scope="module")
def mnist_root(tmp_path_factory) -> Path:
    """The bundled MNIST LMDBs: the user's prepared copy, or a fresh one for this module."""
    folder = mnist.default_folder()
    return folder if mnist.is_complete(folder) else mnist.ensure_mnist(tmp_path_factory.mktemp("mnist"))


def lenet(mnist_root: Path) -> tuple[caffe_pb2.SolverParameter, DataPaths]:
    """The LeNet example's solver (its net read in) and data paths that find the bundled MNIST."""
    from engine.cli.train import data_beside, read_solver

    param = read_solver(str(LENET_SOLVER))
    return param, data_beside(param).with_root(mnist_root)
