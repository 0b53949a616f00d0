"""What a layer of a given type looks like when a user first adds it, and what it is called.

The settings are declared by the type's engine class (``Layer.template``): the ones Caffe's own
examples start from, so a fresh layer is runnable as soon as it is wired (a Convolution has 32
outputs, a 3x3 kernel, xavier weights and a constant bias). The names are the app's: the words
Caffe's examples use.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from google.protobuf import text_format

from engine.layers import find_layer_class
from proto import caffe_pb2

LayerParameter = caffe_pb2.LayerParameter

# The stem a new layer's name starts from: the words Caffe's examples use. Every registered type has
# one (tests/app/test_type_facts.py); a type nobody registered (a Python layer's) gets its own name.
STEMS = {
    "Convolution": "conv",
    "Deconvolution": "deconv",
    "InnerProduct": "ip",
    "Pooling": "pool",
    "LRN": "norm",
    "BatchNorm": "bn",
    "Dropout": "drop",
    "SoftmaxWithLoss": "loss",
    "EuclideanLoss": "loss",
    "SigmoidCrossEntropyLoss": "loss",
    "HingeLoss": "loss",
    "ContrastiveLoss": "loss",
    "InfogainLoss": "loss",
    "MultinomialLogisticLoss": "loss",
    "Softmax": "prob",
    "Accuracy": "accuracy",
    "Input": "data",
    "Data": "data",
    "ImageData": "data",
    "HDF5Data": "data",
    "DummyData": "data",
    "MemoryData": "data",
    "WindowData": "data",
    "LSTM": "lstm",
    "RNN": "rnn",
    "HDF5Output": "output",
    "AbsVal": "absval", "ArgMax": "argmax", "BNLL": "bnll", "BatchReindex": "batchreindex",
    "Bias": "bias", "Clip": "clip", "Concat": "concat", "Crop": "crop", "ELU": "elu",
    "Eltwise": "eltwise", "Embed": "embed", "Exp": "exp", "Filter": "filter", "Flatten": "flatten",
    "Im2col": "im2col", "LSTMUnit": "lstmunit", "Log": "log", "MVN": "mvn", "PReLU": "prelu",
    "Parameter": "parameter", "Power": "power", "Python": "python", "ReLU": "relu",
    "Reduction": "reduction", "Reshape": "reshape", "SPP": "spp", "Scale": "scale",
    "Sigmoid": "sigmoid", "Silence": "silence", "Slice": "slice", "Split": "split",
    "Swish": "swish", "TanH": "tanh", "Threshold": "threshold", "Tile": "tile",
}  # fmt: skip


def name_stem(layer_type: str) -> str:
    return STEMS.get(layer_type) or re.sub(r"\W", "", layer_type).lower() or "layer"


def unique_name(taken: Collection[str], base: str) -> str:
    """``base`` if free, else ``base`` with its trailing number raised until free: conv1 -> conv2."""
    if base not in taken:
        return base
    match = re.fullmatch(r"(.*?)(\d*)", base)
    assert match is not None
    stem, digits = match.group(1) or base, match.group(2)
    number = int(digits) + 1 if digits and match.group(1) else 2
    while f"{stem}{number}" in taken:
        number += 1
    return f"{stem}{number}"


def default_layer(layer_type: str, name: str) -> LayerParameter:
    """A new ``layer_type`` layer called ``name`` with its tops; bottoms are left to wire.

    Its parameters and tops are its engine class's ``template`` and ``new_tops``; a type nobody
    registered gets one top named after the layer and nothing else.
    """
    layer = LayerParameter(name=name, type=layer_type)
    cls = find_layer_class(layer_type)
    layer.top.extend(cls.new_tops(name) if cls is not None else [name])
    if cls is not None and cls.template:
        text_format.Merge(cls.template, layer)
    return layer
