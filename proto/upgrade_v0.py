"""V0 nets (``layers { layer { type: "conv" ... } }``) to V1 nets, as Caffe's UpgradeV0Net does.

Two passes: padding layers are folded into the conv/pool layer they feed (their ``pad`` moves
there and the consumer reads the padding layer's input), then each V0 layer's flat fields move
into the V1 layer's ``*_param`` messages. A field Caffe cannot place for a layer type is reported
as a problem and dropped; a V0 type Caffe does not know, or a padding layer feeding anything but
one conv/pool, is a FormatError (Caffe aborts on both).
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from proto import caffe_pb2
from proto.errors import FormatError

V1 = caffe_pb2.V1LayerParameter

V0_LAYER_TYPES: dict[str, caffe_pb2.V1LayerParameter.LayerType] = {
    "accuracy": V1.ACCURACY,
    "bnll": V1.BNLL,
    "concat": V1.CONCAT,
    "conv": V1.CONVOLUTION,
    "data": V1.DATA,
    "dropout": V1.DROPOUT,
    "euclidean_loss": V1.EUCLIDEAN_LOSS,
    "flatten": V1.FLATTEN,
    "hdf5_data": V1.HDF5_DATA,
    "hdf5_output": V1.HDF5_OUTPUT,
    "im2col": V1.IM2COL,
    "images": V1.IMAGE_DATA,
    "infogain_loss": V1.INFOGAIN_LOSS,
    "innerproduct": V1.INNER_PRODUCT,
    "lrn": V1.LRN,
    "multinomial_logistic_loss": V1.MULTINOMIAL_LOGISTIC_LOSS,
    "pool": V1.POOLING,
    "relu": V1.RELU,
    "sigmoid": V1.SIGMOID,
    "softmax": V1.SOFTMAX,
    "softmax_loss": V1.SOFTMAX_LOSS,
    "split": V1.SPLIT,
    "tanh": V1.TANH,
    "window_data": V1.WINDOW_DATA,
}

_ANY = "*"  # the field moves to the same place whatever the layer type
_CONV, _IP, _POOL = "convolution_param", "inner_product_param", "pooling_param"
_DATA, _HDF5, _IMAGES, _WINDOW = "data_param", "hdf5_data_param", "image_data_param", "window_data_param"

# V0 field -> {V0 layer type: (V1 *_param message, its field)}, in the order Caffe applies them.
# A field of None copies the whole message.
V0_FIELDS: tuple[tuple[str, dict[str, tuple[str, str | None]]], ...] = (
    ("num_output", {"conv": (_CONV, "num_output"), "innerproduct": (_IP, "num_output")}),
    ("biasterm", {"conv": (_CONV, "bias_term"), "innerproduct": (_IP, "bias_term")}),
    ("weight_filler", {"conv": (_CONV, "weight_filler"), "innerproduct": (_IP, "weight_filler")}),
    ("bias_filler", {"conv": (_CONV, "bias_filler"), "innerproduct": (_IP, "bias_filler")}),
    ("pad", {"conv": (_CONV, "pad"), "pool": (_POOL, "pad")}),
    ("kernelsize", {"conv": (_CONV, "kernel_size"), "pool": (_POOL, "kernel_size")}),
    ("group", {"conv": (_CONV, "group")}),
    ("stride", {"conv": (_CONV, "stride"), "pool": (_POOL, "stride")}),
    ("pool", {"pool": (_POOL, "pool")}),
    ("dropout_ratio", {"dropout": ("dropout_param", "dropout_ratio")}),
    ("local_size", {"lrn": ("lrn_param", "local_size")}),
    ("alpha", {"lrn": ("lrn_param", "alpha")}),
    ("beta", {"lrn": ("lrn_param", "beta")}),
    ("k", {"lrn": ("lrn_param", "k")}),
    (
        "source",
        {
            "data": (_DATA, "source"),
            "hdf5_data": (_HDF5, "source"),
            "images": (_IMAGES, "source"),
            "window_data": (_WINDOW, "source"),
            "infogain_loss": ("infogain_loss_param", "source"),
        },
    ),
    ("scale", {_ANY: ("transform_param", "scale")}),
    ("meanfile", {_ANY: ("transform_param", "mean_file")}),
    (
        "batchsize",
        {
            "data": (_DATA, "batch_size"),
            "hdf5_data": (_HDF5, "batch_size"),
            "images": (_IMAGES, "batch_size"),
            "window_data": (_WINDOW, "batch_size"),
        },
    ),
    ("cropsize", {_ANY: ("transform_param", "crop_size")}),
    ("mirror", {_ANY: ("transform_param", "mirror")}),
    ("rand_skip", {"data": (_DATA, "rand_skip"), "images": (_IMAGES, "rand_skip")}),
    ("shuffle_images", {"images": (_IMAGES, "shuffle")}),
    ("new_height", {"images": (_IMAGES, "new_height")}),
    ("new_width", {"images": (_IMAGES, "new_width")}),
    ("concat_dim", {"concat": ("concat_param", "concat_dim")}),
    ("det_fg_threshold", {"window_data": (_WINDOW, "fg_threshold")}),
    ("det_bg_threshold", {"window_data": (_WINDOW, "bg_threshold")}),
    ("det_fg_fraction", {"window_data": (_WINDOW, "fg_fraction")}),
    ("det_context_pad", {"window_data": (_WINDOW, "context_pad")}),
    ("det_crop_mode", {"window_data": (_WINDOW, "crop_mode")}),
    ("hdf5_output_param", {"hdf5_output": ("hdf5_output_param", None)}),
)


def net_needs_v0_to_v1_upgrade(net: caffe_pb2.NetParameter) -> bool:
    return any(layer.HasField("layer") for layer in net.layers)


def upgrade_v0_net(net: caffe_pb2.NetParameter, source: str, problems: list[str]) -> caffe_pb2.NetParameter:
    """A new V1 net: only name, layers, input, input_dim and force_backward carry over (as in Caffe)."""
    padded = fold_padding_layers(net, source)
    out = caffe_pb2.NetParameter()
    if padded.HasField("name"):
        out.name = padded.name
    for connection in padded.layers:
        upgrade_v0_layer(connection, out.layers.add(), source, problems)
    out.input.extend(padded.input)
    out.input_dim.extend(padded.input_dim)
    if padded.HasField("force_backward"):
        out.force_backward = padded.force_backward
    return out


def fold_padding_layers(net: caffe_pb2.NetParameter, source: str) -> caffe_pb2.NetParameter:
    """Drop V0 ``padding`` layers, giving their ``pad`` to the conv/pool layer that reads them."""
    out = caffe_pb2.NetParameter()
    out.CopyFrom(net)
    del out.layers[:]
    last_producer = dict.fromkeys(net.input, -1)  # blob -> index of the layer that last wrote it
    for i, connection in enumerate(net.layers):
        v0 = connection.layer
        if v0.type != "padding":
            out.layers.add().CopyFrom(connection)
        for j, blob in enumerate(connection.bottom):
            if blob not in last_producer:
                raise FormatError(source, f'Unknown blob input {blob} to V0 layer {i} ("{v0.name}")')
            producer = last_producer[blob]
            if producer == -1 or net.layers[producer].layer.type != "padding":
                continue
            padding = net.layers[producer]
            _check_padding_use(padding, connection, source)
            folded = out.layers[-1]
            folded.layer.pad = padding.layer.pad
            folded.bottom[j] = padding.bottom[0]
        for blob in connection.top:
            last_producer[blob] = i
    return out


def _check_padding_use(padding: Any, consumer: Any, source: str) -> None:
    name = consumer.layer.name
    if consumer.layer.type not in ("conv", "pool"):
        raise FormatError(
            source,
            f"Padding layer input to non-convolutional / non-pooling layer type {consumer.layer.type} "
            f'(padding layer "{padding.layer.name}" feeds layer "{name}")',
        )
    if len(consumer.bottom) != 1:
        raise FormatError(
            source, f'layer "{name}" reads a padding layer: Conv Layer takes a single blob as input.'
        )
    if len(padding.bottom) != 1 or len(padding.top) != 1:
        raise FormatError(
            source, f'padding layer "{padding.layer.name}" must take a single blob and produce a single blob'
        )


def upgrade_v0_layer(
    connection: caffe_pb2.V1LayerParameter,
    out: caffe_pb2.V1LayerParameter,
    source: str,
    problems: list[str],
) -> None:
    """Fill ``out`` (a V1 layer) from a V0 layer connection."""
    out.Clear()
    out.bottom.extend(connection.bottom)
    out.top.extend(connection.top)
    if not connection.HasField("layer"):
        return
    v0 = connection.layer
    if v0.HasField("name"):
        out.name = v0.name
    kind = v0.type
    if v0.HasField("type"):
        if kind not in V0_LAYER_TYPES:
            raise FormatError(source, f'Unknown layer name: {kind} (the type of V0 layer "{v0.name}")')
        out.type = V0_LAYER_TYPES[kind]
    out.blobs.extend(v0.blobs)
    out.blobs_lr.extend(v0.blobs_lr)
    out.weight_decay.extend(v0.weight_decay)
    for field, targets in V0_FIELDS:
        if not v0.HasField(field):
            continue
        target = targets.get(kind) or targets.get(_ANY)
        if target is None:
            word = "shuffle" if field == "shuffle_images" else field  # Caffe's own name for it
            problems.append(f'Unknown parameter {word} for layer type {kind} (layer "{v0.name}"); dropped')
            continue
        message_name, target_field = target
        _put(getattr(out, message_name), target_field, field, getattr(v0, field))


def _put(message: Message, field: str | None, v0_field: str, value: Any) -> None:
    if field is None:
        message.CopyFrom(value)
        return
    if v0_field == "pool":  # same names and numbers, different enum types
        value = caffe_pb2.PoolingParameter.PoolMethod.Value(caffe_pb2.V0LayerParameter.PoolMethod.Name(value))
    descriptor: Any = message.DESCRIPTOR.fields_by_name[field]
    if descriptor.is_repeated:
        getattr(message, field).append(value)
    elif descriptor.message_type is not None:
        getattr(message, field).CopyFrom(value)
    else:
        setattr(message, field, value)
