"""A net's weights in and out of files: Caffe's binary caffemodel and its HDF5 layout.

Reading is Caffe's ``CopyTrainedLayersFrom``: a NetParameter (or a binary caffemodel, parsed and
upgraded) gives each layer the blobs of the first source layer of its name; an HDF5 file
(``CopyTrainedLayersFromHDF5``) the last. Layers the net lacks are skipped with Caffe's log line
"Ignoring source layer NAME". Writing is ``Net::ToProto`` into a caffemodel, or ``Net::ToHDF5``: a
group per layer under ``data`` (splits and parameter-less layers included), a dataset per
parameter the layer *owns* (a shared parameter is written once, by its owner), and with diffs a
``diff`` group holding every parameter's gradient.

The net is reached only through what :class:`WeightedNet` names, so this module does not import
engine.net (which calls it); h5py loads with the first HDF5 file, not with the net.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from engine import backend
from engine.blob import Blob
from engine.errors import NetError
from proto import caffe_pb2
from proto.errors import FormatError

log = logging.getLogger("engine.net")
PathLike = str | os.PathLike[str]


class _Layer(Protocol):
    @property
    def blobs(self) -> list[Blob]: ...


class WeightedNet(Protocol):
    """What weight I/O reads of a net (engine.net.Net has it)."""

    @property
    def layer_names(self) -> list[str]: ...
    @property
    def layers(self) -> Sequence[_Layer]: ...
    @property
    def param_id_vecs(self) -> list[list[int]]: ...
    @property
    def param_owners(self) -> list[int]: ...

    def to_proto(self, write_diff: bool = False) -> caffe_pb2.NetParameter: ...


# --- reading -------------------------------------------------------------------------------------
def copy_trained_layers_from(net: WeightedNet, source: caffe_pb2.NetParameter | PathLike) -> None:
    """``CopyTrainedLayersFrom``: from a NetParameter or a weights file (HDF5 by its content, else binary)."""
    if isinstance(source, caffe_pb2.NetParameter):
        copy_trained_layers_from_param(net, source)
    else:
        copy_trained_layers_from_file(net, source)


def copy_trained_layers_from_file(net: WeightedNet, path: PathLike) -> None:
    """Caffe's ``CopyTrainedLayersFrom(filename)``: HDF5 when the file is HDF5, else binary proto."""
    from proto import binaryio, hdf5io

    if hdf5io.is_hdf5(path):
        copy_trained_layers_from_hdf5(net, path)
        return
    try:
        param = binaryio.read_caffemodel(path)
    except OSError as exc:
        raise FormatError(path, f"cannot read the weights: {exc.strerror or exc}") from exc
    from engine.errors import naming_file

    with naming_file(path):  # with several weights files the message says which one did not fit
        copy_trained_layers_from_param(net, param)


def copy_trained_layers_from_param(net: WeightedNet, source: caffe_pb2.NetParameter) -> None:
    """Each layer gets the blobs of the source layer of its name (matched by name alone, so a source
    layer of another type loads when its blobs fit). A matched layer must bring exactly as many blobs
    as it holds, each of a shape ``Blob::ShapeEquals`` accepts (legacy num/channels/height/width match
    the shape padded with leading 1s to 4 axes) and with values for every element (double_data before
    data; diffs too when the source has any). Everything is checked before anything is written, so a
    refused source leaves the net as it was."""
    from proto.upgrade import net_needs_upgrade, upgrade_net_as_needed

    param = upgrade_net_as_needed(source) if net_needs_upgrade(source) else source
    copies: list[tuple[Blob, caffe_pb2.BlobProto]] = []
    for layer in param.layer:
        if layer.name not in net.layer_names:
            log.info("Ignoring source layer %s", layer.name)
            continue
        target = net.layers[net.layer_names.index(layer.name)].blobs
        if len(target) != len(layer.blobs):
            raise NetError(
                f"Incompatible number of blobs for layer {layer.name} "
                f"(the source has {len(layer.blobs)}, this net's layer {len(target)})"
            )
        for j, (blob, proto) in enumerate(zip(target, layer.blobs)):
            _check_trained_blob(layer.name, j, blob, proto)
            copies.append((blob, proto))
    for blob, proto in copies:  # one blob at a time: no second copy of a whole model in memory
        data = proto.double_data if len(proto.double_data) else proto.data
        blob.data[...] = blob.xp.asarray(np.asarray(data, blob.dtype).reshape(blob.shape))
        diff = proto.double_diff if len(proto.double_diff) else proto.diff
        if len(diff):
            blob.diff[...] = blob.xp.asarray(np.asarray(diff, blob.dtype).reshape(blob.shape))


def copy_trained_layers_from_hdf5(net: WeightedNet, path: PathLike) -> None:
    """``CopyTrainedLayersFromHDF5``: a layer may have fewer datasets than parameters only where the
    missing ones are shared from another layer; each dataset must have exactly the parameter's shape."""
    from proto import hdf5io

    source = hdf5io.read_weights(path)
    for name, datasets in source.items():
        if name not in net.layer_names:
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


# --- writing -------------------------------------------------------------------------------------
def write_net_binary(net: WeightedNet, path: PathLike, write_diff: bool = False) -> None:
    """The net as a binary caffemodel (``Net::ToProto`` serialised), written atomically."""
    from proto import binaryio

    binaryio.write_caffemodel(path, net.to_proto(write_diff=write_diff))


def write_net_hdf5(net: WeightedNet, path: PathLike, write_diff: bool = False) -> None:
    """``Net::ToHDF5``."""
    from proto import hdf5io

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


# --- checks --------------------------------------------------------------------------------------
def _check_trained_blob(layer: str, j: int, blob: Blob, proto: caffe_pb2.BlobProto) -> None:
    """Raise the NetError Caffe's ``ShapeEquals`` / ``FromProto`` checks would end in, if any."""
    if not blob.shape_equals(proto):
        legacy = any(proto.HasField(f) for f in ("num", "channels", "height", "width"))
        dims = (proto.num, proto.channels, proto.height, proto.width) if legacy else tuple(proto.shape.dim)
        raise NetError(
            f"Cannot copy param {j} weights from layer '{layer}'; shape mismatch.  Source param shape is "
            f"{_caffe_shape_string(dims)}; target param shape is {_caffe_shape_string(blob.shape)}. "
            "To learn this layer's parameters from scratch rather than copying from a saved net, "
            "rename the layer."
        )
    # Values: double_* when present, else the float field; data must fill the blob, diff may be absent.
    for double, single, required in (("double_data", "data", True), ("double_diff", "diff", False)):
        field = double if len(getattr(proto, double)) else single
        count = len(getattr(proto, field))
        if count != blob.count() and (required or count):
            raise NetError(
                f"Cannot copy param {j} weights from layer '{layer}': its {field} holds {count} "
                f"values for the shape {_caffe_shape_string(blob.shape)}"
            )


def _caffe_shape_string(shape: tuple[int, ...]) -> str:
    """Blob::shape_string: each axis followed by a space, then the count: '5 12 (60)', '(1)'."""
    return "".join(f"{d} " for d in shape) + f"({int(np.prod(shape, dtype=np.int64))})"
