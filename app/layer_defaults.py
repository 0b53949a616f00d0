"""What a layer of a given type looks like when a user first adds it, and what it is called.

The settings are the ones Caffe's own examples start from, so a fresh layer is runnable as soon
as it is wired: a Convolution has 32 outputs, a 3x3 kernel, xavier weights and a constant bias.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from proto import caffe_pb2

LayerParameter = caffe_pb2.LayerParameter

# The stem a new layer's name starts from: the words Caffe's examples use.
_STEMS = {
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
}

# Layers whose tops are the data and the labels rather than one blob named after the layer.
_DATA_TOPS = {
    "Data": ["data", "label"],
    "ImageData": ["data", "label"],
    "HDF5Data": ["data", "label"],
    "MemoryData": ["data", "label"],
    "WindowData": ["data", "label"],
}
_NO_TOPS = {"Silence", "HDF5Output"}
# Layers with several tops of their own: named after the layer with these endings.
_TOP_ENDINGS = {"LSTMUnit": ("_c", "_h")}


def name_stem(layer_type: str) -> str:
    return _STEMS.get(layer_type) or re.sub(r"\W", "", layer_type).lower() or "layer"


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


def _learnable(field: str, num_output: int) -> Callable[[LayerParameter], None]:
    def fill(layer: LayerParameter) -> None:
        param = getattr(layer, field)
        param.num_output = num_output
        param.weight_filler.type = "xavier"
        param.bias_filler.type = "constant"

    return fill


def _convolution(field: str) -> Callable[[LayerParameter], None]:
    def fill(layer: LayerParameter) -> None:
        _learnable(field, 32)(layer)
        getattr(layer, field).kernel_size.append(3)

    return fill


def _pooling(layer: LayerParameter) -> None:
    p = layer.pooling_param
    p.pool, p.kernel_size, p.stride = caffe_pb2.PoolingParameter.MAX, 2, 2


def _lrn(layer: LayerParameter) -> None:
    p = layer.lrn_param
    p.local_size, p.alpha, p.beta = 5, 1e-4, 0.75


def _input(layer: LayerParameter) -> None:
    layer.input_param.shape.add().dim.extend([1, 3, 224, 224])


def _data(layer: LayerParameter) -> None:
    layer.data_param.batch_size = 64
    layer.data_param.backend = caffe_pb2.DataParameter.LMDB


def _embed(layer: LayerParameter) -> None:
    _learnable("embed_param", 32)(layer)
    layer.embed_param.input_dim = 1000


def _dummy_data(layer: LayerParameter) -> None:
    layer.dummy_data_param.shape.add().dim.extend([64, 1, 28, 28])


def _memory_data(layer: LayerParameter) -> None:
    p = layer.memory_data_param
    p.batch_size, p.channels, p.height, p.width = 64, 1, 28, 28


def _window_data(layer: LayerParameter) -> None:
    """R-CNN's fine-tuning settings (Caffe's finetune_pascal_detection example); no window file yet."""
    p = layer.window_data_param
    p.batch_size, p.context_pad = 128, 16
    p.fg_threshold, p.bg_threshold, p.fg_fraction = 0.5, 0.5, 0.25
    layer.transform_param.crop_size, layer.transform_param.mirror = 227, True


def _clip(layer: LayerParameter) -> None:
    layer.clip_param.min, layer.clip_param.max = 0.0, 6.0  # both required: ReLU6


_FILL: dict[str, Callable[[LayerParameter], None]] = {
    "Convolution": _convolution("convolution_param"),
    "Deconvolution": _convolution("convolution_param"),
    "InnerProduct": _learnable("inner_product_param", 64),
    "Embed": _embed,
    "LSTM": _learnable("recurrent_param", 64),
    "RNN": _learnable("recurrent_param", 64),
    "HDF5Output": lambda layer: setattr(layer.hdf5_output_param, "file_name", "output.h5"),
    "Pooling": _pooling,
    "LRN": _lrn,
    "Dropout": lambda layer: setattr(layer.dropout_param, "dropout_ratio", 0.5),
    "Scale": lambda layer: setattr(layer.scale_param, "bias_term", True),
    "Input": _input,
    "Data": _data,
    "ImageData": lambda layer: setattr(layer.image_data_param, "batch_size", 64),
    "HDF5Data": lambda layer: setattr(layer.hdf5_data_param, "batch_size", 64),
    "DummyData": _dummy_data,
    "MemoryData": _memory_data,
    "WindowData": _window_data,
    "Im2col": lambda layer: layer.convolution_param.kernel_size.append(3),
    "SPP": lambda layer: setattr(layer.spp_param, "pyramid_height", 2),
    "Clip": _clip,
    "Tile": lambda layer: setattr(layer.tile_param, "tiles", 2),
    # Reshape keeps the batch axis and flattens the rest.
    "Reshape": lambda layer: layer.reshape_param.shape.dim.extend([0, -1]),
    "Parameter": lambda layer: layer.parameter_param.shape.dim.extend([1, 64]),
}


def default_layer(layer_type: str, name: str) -> LayerParameter:
    """A new ``layer_type`` layer called ``name`` with its first top; bottoms are left to wire."""
    layer = LayerParameter(name=name, type=layer_type)
    if layer_type in _DATA_TOPS:
        layer.top.extend(_DATA_TOPS[layer_type])
    elif layer_type in _TOP_ENDINGS:
        layer.top.extend(name + ending for ending in _TOP_ENDINGS[layer_type])
    elif layer_type not in _NO_TOPS:
        layer.top.append(name)
    fill = _FILL.get(layer_type)
    if fill is not None:
        fill(layer)
    return layer
