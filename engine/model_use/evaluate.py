"""A trained model scored on a labelled data set. Qt-free.

The deploy net (given, or derived from a train_val net) runs the data through its data layer's
transform in the TEST phase (engine/data/transformer.py: centre crop, mean, scale), batch by batch;
its output (``prob``; a softmax of it when the net ends in raw scores) gives each item's class
probabilities, and engine/model_use/metrics.py the scores. With no data named, the train_val net's
TEST data layer says what to read: its Data layer's LMDB or its ImageData list (root_folder,
new_height/new_width, is_color), so the numbers are those of the layer itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np

from engine import backend, relative_paths
from engine.data.errors import DataError
from engine.data.paths import DataPaths
from engine.data.transformer import DataTransformer
from engine.errors import EngineError
from engine.model_use import classify, datasets, deploy, preprocess
from engine.model_use.metrics import Evaluation
from engine.net import Net
from engine.netstate import filter_net
from engine.weights import copy_trained_layers_from_file
from proto import caffe_pb2, textio


class Cancelled(EngineError):
    """The evaluation was stopped by its caller."""


def test_data(
    source: classify.NetSource,
    channels: int,
    size: tuple[int, int] | None,
    data_paths: DataPaths,
    net_path: str | os.PathLike[str] | None = None,
) -> datasets.LMDBData | datasets.ImageData:
    """The data the train_val net's TEST data layer reads (relative sources found from the net's
    file, the working directory, then ``data_paths``)."""
    if isinstance(source, caffe_pb2.NetParameter):
        param = source
    else:
        param, net_path = textio.read_net(source), source
    net = filter_net(param, caffe_pb2.NetState(phase=caffe_pb2.TEST))
    where = net_path or "the net"
    layers = [l for l in net.layer if deploy.is_data_layer(l) and l.type != "Input"]
    if not layers:
        raise DataError(f"{where}: no TEST data layer to read (name the data: --data)")
    layer = layers[0]
    if layer.type == "Data":
        source = layer.data_param.source
        found = relative_paths.find(source, net_path, cwd_first=True, folder=True)
        return datasets.LMDBData(found.path if found else data_paths.resolve(source))
    if layer.type == "ImageData":
        p = layer.image_data_param
        found = relative_paths.find(p.source, net_path, cwd_first=True)
        listing = found.path if found else data_paths.resolve(p.source)
        resize = (p.new_height, p.new_width) if p.new_height and p.new_width else size
        return datasets.image_list(listing, 3 if p.is_color else 1, resize, p.root_folder)
    raise DataError(
        f"{where}: the TEST data layer '{layer.name}' is {layer.type}; evaluate reads Data and ImageData "
        "layers (name the data: --data)"
    )


class Evaluator:
    """The deploy net of ``net_path`` with ``weights``, ready to score batches of items."""

    def __init__(
        self,
        source: classify.NetSource,
        weights: str | None,
        batch_size: int = 32,
        net_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if not isinstance(source, caffe_pb2.NetParameter):
            net_path = source
        param, _ = classify.deploy_net(source, batch_size, net_path)
        if not param.layer or param.layer[0].type != "Input" or len(param.layer[0].input_param.shape) == 0:
            raise DataError(
                f"{net_path or 'the net'}: evaluate needs an Input layer (or data layers to derive one)"
            )
        shape = param.layer[0].input_param.shape[0]
        shape.dim[0] = batch_size
        self.input_name = param.layer[0].top[0]
        self.input_shape = tuple(int(d) for d in shape.dim)
        transform = preprocess.read_transform(param) or caffe_pb2.TransformationParameter()
        folders = tuple(relative_paths.folders_from(net_path)) if net_path else ()
        paths = DataPaths(search_from=folders)
        self.transformer = DataTransformer(transform, caffe_pb2.TEST, np.float32, paths)
        param.state.phase = caffe_pb2.TEST
        self.net = Net(param)
        if weights:
            copy_trained_layers_from_file(self.net, weights)
        self.output = self.net.output_blob_names[0]
        self.transform = transform

    @property
    def channels(self) -> int:
        return self.input_shape[1]

    @property
    def classes(self) -> int:
        return int(np.prod(self.net.blob_by_name(self.output).shape[1:]))

    def image_size(self) -> tuple[int, int]:
        """The size images are resized to before the transform: the mean image's when there is a
        mean file (the size the data set was made at), else the input's."""
        if self.transformer.mean is not None:
            return int(self.transformer.mean.shape[1]), int(self.transformer.mean.shape[2])
        return self.input_shape[2], self.input_shape[3]

    def probabilities(self, items: Sequence[np.ndarray]) -> np.ndarray:
        x = self.transformer(list(items))
        blob = self.net.blob_by_name(self.input_name)
        if tuple(blob.shape) != x.shape:
            blob.reshape(x.shape)
            self.net.reshape()
        blob.data[...] = backend.to_module(x, backend.get_array_module(blob.data))
        self.net.forward_from_to()
        out = backend.to_host(self.net.blob_by_name(self.output).data).reshape(len(x), -1).astype(np.float64)
        if (out < 0).any() or not np.allclose(out.sum(axis=1), 1, atol=1e-3):
            out = np.exp(out - out.max(axis=1, keepdims=True))  # raw scores: their softmax
            out /= out.sum(axis=1, keepdims=True)
        return out

    def close(self) -> None:
        self.net.close()


def evaluate(
    evaluator: Evaluator,
    data: datasets.LMDBData | datasets.ImageData,
    class_names: Sequence[str] | None = None,
    *,
    batch_size: int = 32,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    warn: Callable[[str], None] = lambda _: None,
) -> Evaluation:
    """Every item of ``data`` through the model; ``progress(done, total)`` after each batch;
    ``cancelled()`` is asked before each batch (True: Cancelled is raised)."""
    classes = evaluator.classes
    names = list(class_names or data.class_names or [str(i) for i in range(classes)])
    if len(names) != classes:
        raise DataError(f"{len(names)} class names but the model gives {classes} outputs")
    all_names: list[str] = []
    labels, probs = [], []
    done = 0
    for batch_names, items, batch_labels in data.batches(batch_size, warn):
        if cancelled is not None and cancelled():
            raise Cancelled("evaluation cancelled")
        done += batch_size
        if items:
            bad = batch_labels[(batch_labels < 0) | (batch_labels >= classes)]
            if bad.size:
                where = batch_names[int(np.flatnonzero(batch_labels == bad[0])[0])]
                raise DataError(f"{where}: label {bad[0]} is outside the model's {classes} classes")
            probs.append(evaluator.probabilities(items))
            labels.append(batch_labels)
            all_names += batch_names
        if progress is not None:
            progress(min(done, data.count), data.count)
    return Evaluation(
        all_names,
        np.concatenate(labels) if labels else np.zeros(0, np.int64),
        np.concatenate(probs) if probs else np.zeros((0, classes)),
        names,
    )


def open_data(
    evaluator: Evaluator,
    source: classify.NetSource,
    data: str | None,
    class_names: Sequence[str] | None,
    size: tuple[int, int] | None,
    data_paths: DataPaths,
    net_path: str | os.PathLike[str] | None = None,
) -> datasets.LMDBData | datasets.ImageData:
    """The named data (LMDB, list or class folders), or the net's TEST data layer's."""
    size = size or evaluator.image_size()
    if data:
        return datasets.open_data(data, evaluator.channels, size, class_names)
    return test_data(source, evaluator.channels, size, data_paths, net_path)


def default_paths(net_path: str | os.PathLike[str] | None) -> DataPaths:
    return DataPaths(search_from=tuple(relative_paths.folders_from(net_path)) if net_path else ())


__all__ = ["Cancelled", "Evaluation", "Evaluator", "evaluate", "open_data", "test_data"]
