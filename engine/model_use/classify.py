"""Classification with pycaffe's Classifier, as Caffe's classify.py does it. Qt-free.

``open_classifier`` builds the Classifier of a deploy net (or of a train_val net, deriving its
deploy net with a batch of 10, one image's crops), its preprocessing by default the transform the
deploy net carries (engine/model_use/preprocess.py), each option overridable as classify.py's
flags override them. ``predict`` gives N x C predictions for N images, in chunks, through
``Classifier.predict``: the mean over ten crops, or the centre crop alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.data.errors import DataError
from engine.model_use import deploy, preprocess
from engine.pycaffe.classifier import Classifier, configure_transformer
from proto import caffe_pb2, textio
from proto.inputs import read_regular_bytes

CHUNK = 16  # images per Classifier.predict call: ten crops each, so 160 net inputs at most


@dataclass
class Model:
    classifier: Classifier
    preprocess: preprocess.Preprocess
    derived: bool  # the deploy net was derived from a train_val net

    @property
    def input_shape(self) -> tuple[int, ...]:
        net = self.classifier
        return tuple(net.blobs[net.inputs[0]].data.shape)

    @property
    def channels(self) -> int:
        return int(self.input_shape[1])

    @property
    def classes(self) -> int:
        net = self.classifier
        return int(np.prod(net.blobs[net.outputs[0]].data.shape[1:]))


NetSource = str | os.PathLike[str] | caffe_pb2.NetParameter


def deploy_net(
    source: NetSource, batch: int = 10, net_path: str | os.PathLike[str] | None = None
) -> tuple[caffe_pb2.NetParameter, bool]:
    """The net a Classifier is built from: the net itself when it is a deploy net, else the deploy
    net derived from it with ``batch`` images a forward pass. ``source`` is a file, or a net whose
    relative paths are found from ``net_path``."""
    if isinstance(source, caffe_pb2.NetParameter):
        net, path = source, net_path
    else:
        net, path = textio.read_net(source), source
    if deploy.is_deploy(net):
        return net, False
    first = deploy.derive(net, path)
    if not first.inputs:
        raise deploy.DeployError("the net has no data layer to make an Input of")
    shape = next(iter(first.inputs.values()))
    return deploy.derive(net, path, (batch, *shape[1:])).net, True


def open_classifier(
    model_path: NetSource,
    weights: str | None,
    *,
    mean: np.ndarray | None = None,
    input_scale: float | None = None,
    raw_scale: float | None = None,
    channel_swap: Sequence[int] | None = None,
    image_dims: Sequence[int] | None = None,
    net_path: str | os.PathLike[str] | None = None,
) -> Model:
    """The Classifier (``weights`` None: the fillers' values); an option left None takes its value
    from the net's transform. ``model_path`` may be a net, its files found from ``net_path``."""
    net, derived = deploy_net(model_path, net_path=net_path)
    if not isinstance(model_path, caffe_pb2.NetParameter):
        net_path = model_path
    clf = Classifier(net, weights)
    shape = tuple(clf.blobs[clf.inputs[0]].data.shape)
    if len(shape) != 4:
        raise DataError(f"the input '{clf.inputs[0]}' is {shape}, not N x C x H x W images")
    chosen = preprocess.from_transform(preprocess.read_transform(net), shape, net_path)
    if mean is not None:
        chosen = chosen.with_changes(mean=preprocess.fit_mean(mean, shape))
    if input_scale is not None:
        chosen = chosen.with_changes(input_scale=input_scale)
    if raw_scale is not None:
        chosen = chosen.with_changes(raw_scale=raw_scale)
    if channel_swap is not None:
        chosen = chosen.with_changes(channel_swap=tuple(channel_swap))
    if image_dims is not None:
        chosen = chosen.with_changes(image_dims=(int(image_dims[0]), int(image_dims[1])))
    try:
        clf.transformer = configure_transformer(
            clf, chosen.mean, chosen.input_scale, chosen.raw_scale, chosen.channel_swap
        )
    except Exception as exc:
        raise DataError(str(exc)) from exc
    if chosen.image_dims is not None:
        clf.image_dims = np.array(chosen.image_dims)
    return Model(clf, chosen, derived)


def predict(
    model: Model,
    images: Sequence[np.ndarray],
    oversample: bool = True,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """N x C predictions, CHUNK images at a time; ``progress(done)`` after each chunk."""
    out = []
    for begin in range(0, len(images), CHUNK):
        chunk = images[begin : begin + CHUNK]
        out.append(model.classifier.predict(chunk, oversample).reshape(len(chunk), -1))
        if progress is not None:
            progress(begin + len(chunk))
    return np.concatenate(out) if out else np.zeros((0, model.classes), np.float32)


def top_k(probabilities: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best classes, best first (ties: the lower index first)."""
    order = np.argsort(-probabilities, kind="stable")[:k]
    return [(int(i), float(probabilities[i])) for i in order]


def read_labels(path: str | os.PathLike[str], classes: int | None = None) -> list[str]:
    """One class name a line (synset_words.txt style: the whole line is the name)."""
    try:
        # names are shown, not matched: a byte that is not UTF-8 (a Latin-1 name) shows as U+FFFD
        lines = read_regular_bytes(path, "text").decode("utf-8", "replace").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the labels: {getattr(exc, 'strerror', None) or exc}") from exc
    while lines and not lines[-1].strip():
        lines.pop()
    names = [line.strip() for line in lines]
    if classes is not None and len(names) != classes:
        raise DataError(f"{path} names {len(names)} classes but the model gives {classes} outputs")
    return names
