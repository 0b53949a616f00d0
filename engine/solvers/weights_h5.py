"""A net's weights in Caffe's HDF5 layout (``Net::ToHDF5`` / ``CopyTrainedLayersFromHDF5``), and
the reader that picks binary or HDF5 by the file's content, as ``CopyTrainedLayersFrom`` does.

Writing: a group per layer under ``data`` (splits and parameter-less layers included); a dataset
per parameter the layer *owns* (a shared parameter is written once, by its owner); with diffs, a
``diff`` group holding every parameter's gradient. Reading: layers absent from the net are
ignored; a layer may have fewer datasets than parameters only where the missing ones are shared
from another layer; each dataset must have exactly the parameter's shape.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from engine import backend
from engine.errors import NetError
from proto import hdf5io
from proto.errors import FormatError

if TYPE_CHECKING:
    from engine.net import Net

log = logging.getLogger("engine.net")


def write_net_hdf5(net: Net, path: str | os.PathLike[str], write_diff: bool = False) -> None:
    layers = []
    for layer_id, (name, layer) in enumerate(zip(net.layer_names, net.layers)):
        ids = net.param_id_vecs[layer_id]
        data = [
            backend.to_host(blob.data) if net.param_owners[ids[j]] == -1 else None
            for j, blob in enumerate(layer.blobs)
        ]
        diff = [backend.to_host(blob.diff) for blob in layer.blobs] if write_diff else None
        layers.append(hdf5io.LayerWeights(name, data, diff))
    hdf5io.write_weights(path, layers, write_diff)


def copy_trained_layers_from_hdf5(net: Net, path: str | os.PathLike[str]) -> None:
    source = hdf5io.read_weights(path)
    for name, datasets in source.items():
        if not net.has_layer(name):
            log.info("Ignoring source layer %s", name)
            continue
        # Caffe's HDF5 reader fills the LAST layer of a name (its binary reader the first).
        layer_id = len(net.layer_names) - 1 - net.layer_names[::-1].index(name)
        blobs = net.layers[layer_id].blobs
        if len(datasets) > len(blobs):
            raise NetError(f"{os.fspath(path)}: Incompatible number of blobs for layer {name}")
        for j, blob in enumerate(blobs):
            values = datasets.get(str(j))
            if values is None:
                if net.param_owners[net.param_id_vecs[layer_id][j]] != -1:
                    continue  # shared: its owner's dataset fills it
                raise NetError(f"{os.fspath(path)}: Incompatible number of blobs for layer {name}")
            if tuple(values.shape) != tuple(blob.shape):
                raise NetError(
                    f"{os.fspath(path)}: Cannot load blob from hdf5; shape mismatch. Source shape is "
                    f"{' '.join(map(str, values.shape))} ({values.size}) target shape is "
                    f"{' '.join(map(str, blob.shape))} ({blob.count()}) (layer {name}, param {j})"
                )
            blob.data[...] = blob.xp.asarray(values.astype(blob.dtype, copy=False))


def copy_trained_layers_from_file(net: Net, path: str | os.PathLike[str]) -> None:
    """Caffe's ``CopyTrainedLayersFrom(filename)``: HDF5 when the file is HDF5, else binary proto."""
    if hdf5io.is_hdf5(path):
        copy_trained_layers_from_hdf5(net, path)
        return
    from proto import binaryio

    try:
        param = binaryio.read_caffemodel(path)
    except OSError as exc:
        raise FormatError(path, f"cannot read the weights: {exc.strerror or exc}") from exc
    net.copy_trained_layers_from(param)
