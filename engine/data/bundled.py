"""The bundled MNIST for nets that read Caffe's MNIST LMDBs: one function the CLI and the app call.

A Data layer whose ``source`` is ``.../mnist_train_lmdb`` or ``.../mnist_test_lmdb`` and that the
run's DataPaths do not find gets the bundled copy (engine/data/mnist.py, converted on first use);
the caller builds its nets with ``data_paths.with_root(folder)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from engine.data import mnist
from engine.data.paths import DataPaths
from proto import caffe_pb2


def bundled_mnist_for(
    nets: Iterable[caffe_pb2.NetParameter], data_paths: DataPaths, progress: mnist.Progress | None = None
) -> Path | None:
    """The bundled MNIST's folder when a Data layer of ``nets`` needs it (prepared now if it is not
    yet), else None: no layer reads Caffe's MNIST, or ``data_paths`` finds every source already."""
    sources = [layer.data_param.source for net in nets for layer in net.layer if layer.type == "Data"]
    missing = [s for s in sources if s and not data_paths.resolve(s).exists()]
    if not any(Path(s).name in mnist.SPLITS for s in missing):
        return None
    return mnist.ensure_mnist(progress=progress)
