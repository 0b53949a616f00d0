"""Fill a built net's learnable blobs again, each layer from a generator of its own.

Caffe fills the layers in order from one random stream, so changing one layer's filler (constant
draws nothing, xavier draws a value per weight) shifts every draw after it. An experiment that
changes only conv1's filler would then also start conv2, ip1, ... from other values. Drawing each
layer from a generator seeded with (seed, layer name) makes a layer's start depend on its own
filler only: two variants that differ in conv1 start every other layer from the same values.
Blobs a layer shares from another (``param { name }``) are left to their owner; blobs no filler
touches (BatchNorm's statistics) keep what the layer gave them.
"""

from __future__ import annotations

import hashlib

import numpy as np

from engine.fillers import get_filler
from engine.layers import find_layer_class
from engine.net import Net
from proto import caffe_pb2

Filler = caffe_pb2.FillerParameter


def layer_generator(seed: int, name: str) -> np.random.Generator:
    key = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng(np.random.SeedSequence([seed, key]))


def filler_of(layer: caffe_pb2.LayerParameter, path: str, default: Filler | None) -> Filler:
    """The filler at ``path`` in ``layer``, or ``default`` (Caffe's: constant 0) while it is unset."""
    holder_path, name = path.rsplit(".", 1)
    holder = layer
    for part in holder_path.split("."):
        holder = getattr(holder, part)
    if holder.HasField(name):
        return getattr(holder, name)
    return default or Filler(type="constant")


def refill(net: Net, seed: int) -> None:
    for i, layer in enumerate(net.layers):
        cls = find_layer_class(layer.type)
        slots = (cls.learnable_blobs(layer.param) or []) if cls is not None else []
        if not slots or len(slots) != len(layer.blobs):
            continue
        gen = layer_generator(seed, net.layer_names[i])
        for j, (slot, blob) in enumerate(zip(slots, layer.blobs)):
            if slot.path is None or net.param_owners[net.param_id_vecs[i][j]] >= 0:
                continue
            filler = get_filler(filler_of(layer.param, slot.path, slot.default))
            blob.data[...] = blob.xp.asarray(filler.sample(blob.shape, blob.dtype, gen))
