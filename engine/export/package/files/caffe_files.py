"""Caffe's files for the training package: the nets and solver (prototxt), weights (.caffemodel, binary
or HDF5) and the solver state (.solverstate), read and written with Caffe's schema (caffe_pb2.py, a
copy of the one protoc generates from caffe.proto, carried in this folder).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import caffe_pb2
import numpy as np
import torch
from google.protobuf import text_format
from google.protobuf.message import DecodeError

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


class FileProblem(Exception):
    """A weights or state file the package cannot use; train.py prints it as one line, exit 2."""


def read_bytes(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise FileProblem(f"{what} {path}: {exc.strerror or exc}") from None
    if not data:
        raise FileProblem(f"{what} {path}: the file is empty")
    return data


def parse(message: Any, data: bytes, path: str, what: str) -> Any:
    try:
        message.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise FileProblem(f"{what} {path}: not a Caffe {type(message).__name__} file ({exc})") from None
    return message


def read_prototxt(path: str, message: Any) -> Any:
    """The package's own prototxt (edited by hand, perhaps): any way it cannot be read is one line."""
    try:
        with open(path, encoding="utf-8") as f:
            return text_format.Parse(f.read(), message)
    except (OSError, UnicodeDecodeError, text_format.ParseError) as exc:
        raise FileProblem(f"{path}: {exc}") from None
    except RecursionError:  # protobuf's parser recurses once per nested block
        raise FileProblem(f"{path}: blocks nested too deep to read") from None


def blob_array(blob: Any) -> np.ndarray:
    """A BlobProto's values (double_data before data) as float32, in its shape (legacy 4-D included)."""
    values = blob.double_data if len(blob.double_data) else blob.data
    return np.asarray(values, np.float32)


def load_weights(path: str, net: Any, say: Any = print, what: str = "--weights") -> None:
    """Copy a .caffemodel (binary or HDF5) into ``net`` by layer name, as Caffe's CopyTrainedLayersFrom:
    a layer the net lacks is skipped ("Ignoring source layer"), a blob must have the parameter's count.
    FileProblem for a file that cannot be read, is empty or holds no layers."""
    data = read_bytes(path, what)
    if data.startswith(HDF5_SIGNATURE):
        import h5py

        try:
            with h5py.File(path, "r") as h5:
                layers = [
                    (name, [np.asarray(group[str(i)], np.float32) for i in range(len(group))])
                    for name, group in h5["data"].items()
                ]
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise FileProblem(f"{what} {path}: not a Caffe HDF5 weights file ({exc})") from None
    else:
        param = parse(caffe_pb2.NetParameter(), data, path, what)
        layers = [
            (layer.name, [blob_array(b) for b in layer.blobs]) for layer in (*param.layer, *param.layers)
        ]
    if not layers:
        raise FileProblem(f"{what} {path}: holds no layers (not a .caffemodel?)")
    state = net.state_dict()
    for name, blobs in layers:
        if name not in net.caffe_layers:
            say(f"Ignoring source layer {name}")
            continue
        _, attr, names = net.caffe_layers[name]
        if len(blobs) != len(names):
            raise FileProblem(f"{path}: layer {name} has {len(blobs)} blobs, the net's {len(names)}")
        for blob_name, values in zip(names, blobs):
            target = state[f"{attr}.{blob_name}"]
            if values.size != target.numel():
                raise FileProblem(
                    f"{path}: layer {name} blob {blob_name} holds {values.size} values, "
                    f"the net's {target.numel()}"
                )
            with torch.no_grad():
                target.copy_(torch.from_numpy(values.reshape(tuple(target.shape))))


def to_blob(tensor: torch.Tensor) -> Any:
    blob = caffe_pb2.BlobProto()
    blob.shape.dim.extend(tensor.shape)
    blob.data.extend(tensor.detach().cpu().reshape(-1).tolist())
    return blob


def write_atomic(path: str, data: bytes) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # replaces a link planted at ``path``, never writes through it
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_weights(path: str, net: Any, name: str) -> None:
    """The net's learned blobs as a binary .caffemodel (a NetParameter of the layers holding blobs)."""
    param = caffe_pb2.NetParameter(name=name)
    for caffe_name, (kind, attr, names) in net.caffe_layers.items():
        layer = param.layer.add(name=caffe_name, type=kind)
        module = net.get_submodule(attr)
        for blob_name in names:
            layer.blobs.append(to_blob(getattr(module, blob_name)))
    write_atomic(path, param.SerializeToString())


def save_state(
    path: str, iteration: int, learned_net: str, current_step: int, history: list[torch.Tensor]
) -> None:
    """A .solverstate: the iteration, the weights file, the multistep position and the history blobs."""
    state = caffe_pb2.SolverState(iter=iteration, learned_net=learned_net, current_step=current_step)
    for h in history:
        state.history.append(to_blob(h))
    write_atomic(path, state.SerializeToString())


def load_state(path: str) -> tuple[int, str, int, list[np.ndarray]]:
    state = parse(caffe_pb2.SolverState(), read_bytes(path, "--snapshot"), path, "--snapshot")
    learned = state.learned_net
    if learned and not os.path.exists(learned):  # a snapshot folder that was moved
        learned = os.path.join(os.path.dirname(path), os.path.basename(learned))
    return state.iter, learned, state.current_step, [blob_array(b) for b in state.history]
