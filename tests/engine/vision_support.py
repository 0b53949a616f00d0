"""Replay of one layer of a Caffe golden case (imported by name by the vision-layer tests).

The golden nets are Input -> layer -> EuclideanLoss(layer, target), so the layer's top diff after
Caffe's backward was (top - target) / num. The layer is built alone from its net.prototxt text with
the weights of weights.caffemodel, fed the stored inputs, and compared in float32 as Caffe ran.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
from google.protobuf import text_format
from tests_support import close

from engine.blob import Blob
from engine.layers import create_layer
from engine.testing import host
from proto import caffe_pb2


def replay_golden_layer(
    goldens: Path, case: str, layer_name: str, xp: ModuleType, rtol: float = 1e-4
) -> None:
    folder = goldens / "layers" / case
    net = caffe_pb2.NetParameter()
    text_format.Parse((folder / "net.prototxt").read_text(), net)
    param = next(layer for layer in net.layer if layer.name == layer_name)
    saved = caffe_pb2.NetParameter.FromString((folder / "weights.caffemodel").read_bytes())
    param.blobs.extend(next(layer for layer in saved.layer if layer.name == layer_name).blobs)
    param.phase = caffe_pb2.TRAIN
    io = np.load(folder / "io.npz")

    layer = create_layer(param, xp=xp, dtype=np.float32)
    bottom = [Blob(io[f"data/{name}"].shape, np.float32, xp) for name in param.bottom]
    for blob, name in zip(bottom, param.bottom):
        blob.data[...] = xp.asarray(io[f"data/{name}"])
    top = [Blob((), np.float32, xp) for _ in param.top]
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    want = io[f"data/{param.top[0]}"]
    assert close(host(top[0].data), want, rtol), f"{case}: forward differs from Caffe"

    top[0].diff[...] = xp.asarray((want - io["data/target"]) / want.shape[0])
    layer.backward(top, [True] * len(bottom), bottom)
    for blob, name in zip(bottom, param.bottom):
        assert close(host(blob.diff), io[f"diff/{name}"], rtol), f"{case}: diff of {name} differs from Caffe"
    for i, blob in enumerate(layer.blobs):
        assert close(host(blob.diff), io[f"pdiff/{layer_name}/{i}"], rtol), f"{case}: param {i} diff differs"
