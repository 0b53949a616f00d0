"""Which ``*_param`` messages of a LayerParameter a layer type reads, as Caffe's layers do.

Qt-free. Most types read the one message named after them (InnerProduct -> inner_product_param);
the table lists the exceptions: shared messages (Deconvolution reads convolution_param), the
transform_param of data layers and the loss_param every loss layer reads.
"""

from __future__ import annotations

import re

from proto import caffe_pb2

_LAYER = caffe_pb2.LayerParameter.DESCRIPTOR

# The fields every layer has, in the order the inspector shows them.
IDENTITY_FIELDS = ("name", "type", "bottom", "top")
LEARNING_FIELDS = ("param", "loss_weight", "propagate_down")
RULE_FIELDS = ("phase", "include", "exclude")
COMMON_FIELDS = IDENTITY_FIELDS + LEARNING_FIELDS + RULE_FIELDS

_EXPLICIT: dict[str, tuple[str, ...]] = {
    "Deconvolution": ("convolution_param",),
    "Im2col": ("convolution_param",),
    "Data": ("data_param", "transform_param"),
    "ImageData": ("image_data_param", "transform_param"),
    "MemoryData": ("memory_data_param", "transform_param"),
    "WindowData": ("window_data_param", "transform_param"),
    "HDF5Data": ("hdf5_data_param",),
    "HDF5Output": ("hdf5_output_param",),
    "SoftmaxWithLoss": ("softmax_param", "loss_param"),
    "SigmoidCrossEntropyLoss": ("loss_param",),
    "EuclideanLoss": ("loss_param",),
    "MultinomialLogisticLoss": ("loss_param",),
    "HingeLoss": ("hinge_loss_param", "loss_param"),
    "ContrastiveLoss": ("contrastive_loss_param", "loss_param"),
    "InfogainLoss": ("infogain_loss_param", "loss_param"),
    "Accuracy": ("accuracy_param",),
    "ArgMax": ("argmax_param",),
    "LSTM": ("recurrent_param",),
    "RNN": ("recurrent_param",),
    "Recurrent": ("recurrent_param",),
}


def _snake(layer_type: str) -> str:
    """PReLU -> prelu, InnerProduct -> inner_product, HDF5Data -> hdf5_data, LRN -> lrn."""
    words = re.findall(r"[A-Z]+[a-z0-9]*(?![a-z])|[A-Z]?[a-z0-9]+", layer_type)
    return "_".join(w.lower() for w in words)


def param_fields(layer_type: str) -> tuple[str, ...]:
    """The ``*_param`` field names ``layer_type`` reads, most specific first (maybe none)."""
    if layer_type in _EXPLICIT:
        return _EXPLICIT[layer_type]
    for candidate in (f"{_snake(layer_type)}_param", f"{layer_type.lower()}_param"):
        if candidate in _LAYER.fields_by_name:
            return (candidate,)
    return ()


def stray_params(layer: caffe_pb2.LayerParameter) -> list[str]:
    """``*_param`` messages set on ``layer`` that its type never reads (left from an old type)."""
    wanted = set(param_fields(layer.type))
    return [f.name for f, _ in layer.ListFields() if f.name.endswith("_param") and f.name not in wanted]
