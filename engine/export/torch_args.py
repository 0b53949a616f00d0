"""Per Caffe layer type: the exported class and the constructor arguments that reproduce its settings.

Each function reads the engine's set-up layer (whose parsing is Caffe's) and returns keyword
arguments; the learned blobs come as ``blobs={name: shape}`` in Caffe's blob order. A type or a
setting the export cannot reproduce raises ExportError naming the layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine import backend
from engine.export import ExportError, not_exportable
from engine.layers import Layer
from proto import caffe_pb2

Args = dict[str, Any]

# Tops of these layers are the module's inputs: the caller feeds them (the training package's Datasets do).
INPUT_TYPES = {"Input", "Data", "ImageData", "HDF5Data", "MemoryData", "WindowData"}
# Layers the module leaves out: Silence only swallows blobs.
DROPPED = {"Silence"}
P = caffe_pb2.PoolingParameter


def _blobs(layer: Layer, names: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    return {name: tuple(blob.shape) for name, blob in zip(names, layer.blobs)}


def _refuse(layer: Layer, why: str) -> ExportError:
    return ExportError(f"layer '{layer.name}' ({layer.type}): {why}")


def _conv(layer: Any) -> Args:
    if layer.channel_axis != 1:
        raise _refuse(layer, "only axis 1 convolutions can be exported")
    if not 1 <= layer.num_spatial <= 3:
        raise _refuse(layer, f"{layer.num_spatial}-D convolutions cannot be exported (1-D to 3-D can)")
    return dict(
        kernel=layer.kernel,
        stride=layer.stride,
        pad=layer.pad,
        dilation=layer.dilation,
        group=layer.group,
        blobs=_blobs(layer, ("weight", "bias")),
    )


def _pooling(layer: Any) -> Args:
    method = P.PoolMethod.Name(layer.method)
    if method == "STOCHASTIC" and layer.phase == caffe_pb2.TRAIN:
        raise _refuse(layer, "STOCHASTIC pooling draws its own samples in TRAIN; export the TEST phase")
    p = layer.param.pooling_param
    args: Args = dict(method=method, kernel=tuple(layer.kernel), stride=layer.stride, pad=layer.pad)
    if layer.global_pooling:
        args["global_pooling"] = True
    if p.round_mode != P.CEIL:
        args["ceil"] = False
    if len(layer.param.top) > 1:
        args["with_mask"] = True
    return args


def _spp(layer: Any) -> Args:
    method = caffe_pb2.SPPParameter.PoolMethod.Name(layer.param.spp_param.pool)
    if method == "STOCHASTIC" and layer.phase == caffe_pb2.TRAIN:
        raise _refuse(layer, "STOCHASTIC pooling draws its own samples in TRAIN; export the TEST phase")
    return dict(pyramid_height=layer.height, method=method)


def _lrn(layer: Any) -> Args:
    across = layer.param.lrn_param.norm_region == caffe_pb2.LRNParameter.ACROSS_CHANNELS
    return dict(
        local_size=layer.local_size, alpha=layer.alpha, beta=layer.beta, k=layer.k, across_channels=across
    )


def _inner_product(layer: Any) -> Args:
    return dict(axis=layer.axis, transpose=layer.transpose, blobs=_blobs(layer, ("weight", "bias")))


def _batch_norm(layer: Any) -> Args:
    return dict(
        use_global_stats=bool(layer.use_global_stats),
        moving_average_fraction=layer.moving_average_fraction,
        eps=layer.eps,
        blobs=_blobs(layer, ("mean", "variance", "scale_factor")),
    )


def _scale(layer: Any) -> Args:
    names = ("weight", "bias") if len(layer.param.bottom) == 1 else ("bias",)
    return dict(axis=layer.param.scale_param.axis, blobs=_blobs(layer, names))


def _bias(layer: Any) -> Args:
    return dict(axis=layer.param.bias_param.axis, blobs=_blobs(layer, ("bias",)))


def _loss_norm(layer: Any) -> str:
    return caffe_pb2.LossParameter.NormalizationMode.Name(layer.normalization)


def _softmax_loss(layer: Any) -> Args:
    args: Args = dict(axis=layer.param.softmax_param.axis, normalization=_loss_norm(layer))
    if layer.ignore_label is not None:
        args["ignore_label"] = layer.ignore_label
    if len(layer.param.top) > 1:
        args["with_prob"] = True
    return args


def _sigmoid_loss(layer: Any) -> Args:
    args: Args = dict(normalization=_loss_norm(layer))
    if layer.ignore_label is not None:
        args["ignore_label"] = layer.ignore_label
    return args


def _infogain(layer: Any) -> Args:
    args: Args = dict(axis=layer.param.infogain_loss_param.axis, normalization=_loss_norm(layer))
    if layer.ignore_label is not None:
        args["ignore_label"] = layer.ignore_label
    if layer.infogain is not None:  # read from infogain_loss_param.source by the engine: written out
        h = backend.to_host(layer.infogain).reshape(layer.channels, layer.channels)
        args["infogain"] = tuple(tuple(float(v) for v in row) for row in h)
    if len(layer.param.top) > 1:
        args["with_prob"] = True
    return args


def _accuracy(layer: Any) -> Args:
    p = layer.param.accuracy_param
    if len(layer.param.top) > 1:
        raise _refuse(layer, "the per-class accuracy top cannot be exported")
    args: Args = dict(top_k=p.top_k, axis=p.axis)
    if layer.ignore_label is not None:
        args["ignore_label"] = layer.ignore_label
    return args


def _slice(layer: Any) -> Args:
    p = layer.param.slice_param
    axis = p.slice_dim if p.HasField("slice_dim") else p.axis
    return dict(axis=axis, points=tuple(p.slice_point), tops=len(layer.param.top))


def _concat(layer: Any) -> Args:
    p = layer.param.concat_param
    return dict(axis=p.concat_dim if p.HasField("concat_dim") else p.axis)


def _eltwise(layer: Any) -> Args:
    p = layer.param.eltwise_param
    args: Args = dict(operation=caffe_pb2.EltwiseParameter.EltwiseOp.Name(p.operation))
    if p.coeff:
        args["coeffs"] = tuple(p.coeff)
    return args


def _reduction(layer: Any) -> Args:
    p = layer.param.reduction_param
    op = caffe_pb2.ReductionParameter.ReductionOp.Name(p.operation)
    return dict(operation=op, axis=p.axis, coeff=p.coeff)


def _argmax(layer: Any) -> Args:
    p = layer.param.argmax_param
    return dict(top_k=p.top_k, out_max_val=p.out_max_val, axis=p.axis if p.HasField("axis") else None)


def _dummy(layer: Any) -> Args:
    fillers = []
    specs = list(layer.param.dummy_data_param.data_filler)
    for i in range(len(layer.param.top)):
        f = specs[0] if len(specs) == 1 else specs[i] if specs else caffe_pb2.FillerParameter()
        a, b = (
            (f.min, f.max)
            if f.type == "uniform"
            else (f.mean, f.std)
            if f.type != "constant"
            else (f.value, 0)
        )
        fillers.append((f.type, a, b))
    return dict(shapes=[], fillers=fillers)  # the shapes are the set-up net's (torch_codegen)


def _neuron(field: str, *names: str) -> Callable[[Any], Args]:
    def args(layer: Any) -> Args:
        p = getattr(layer.param, field)
        return {name: getattr(p, name) for name in names}

    return args


ARGS: dict[str, Callable[[Any], Args]] = {
    "Convolution": _conv,
    "Deconvolution": _conv,
    "Pooling": _pooling,
    "SPP": _spp,
    "LRN": _lrn,
    "MVN": _neuron("mvn_param", "normalize_variance", "across_channels", "eps"),
    "InnerProduct": _inner_product,
    "BatchNorm": _batch_norm,
    "Scale": _scale,
    "Bias": _bias,
    "ReLU": _neuron("relu_param", "negative_slope"),
    "ELU": _neuron("elu_param", "alpha"),
    "Clip": _neuron("clip_param", "min", "max"),
    "PReLU": lambda layer: dict(blobs=_blobs(layer, ("slope",))),
    "Sigmoid": lambda layer: {},
    "TanH": lambda layer: {},
    "Swish": _neuron("swish_param", "beta"),
    "AbsVal": lambda layer: {},
    "BNLL": lambda layer: {},
    "Power": _neuron("power_param", "power", "scale", "shift"),
    "Exp": _neuron("exp_param", "base", "scale", "shift"),
    "Log": _neuron("log_param", "base", "scale", "shift"),
    "Threshold": _neuron("threshold_param", "threshold"),
    "Dropout": lambda layer: dict(ratio=layer.ratio, train=layer.phase == caffe_pb2.TRAIN),
    "Concat": _concat,
    "Slice": _slice,
    "Split": lambda layer: dict(tops=len(layer.param.top)),
    "Flatten": _neuron("flatten_param", "axis", "end_axis"),
    "Reshape": lambda layer: dict(
        dims=tuple(layer.param.reshape_param.shape.dim),
        axis=layer.param.reshape_param.axis,
        num_axes=layer.param.reshape_param.num_axes,
    ),
    "Crop": lambda layer: dict(
        axis=layer.param.crop_param.axis, offsets=tuple(layer.param.crop_param.offset)
    ),
    "Tile": _neuron("tile_param", "axis", "tiles"),
    "Eltwise": _eltwise,
    "Softmax": _neuron("softmax_param", "axis"),
    "Reduction": _reduction,
    "ArgMax": _argmax,
    "Embed": lambda layer: dict(blobs=_blobs(layer, ("weight", "bias"))),
    "DummyData": _dummy,
    "SoftmaxWithLoss": _softmax_loss,
    "SigmoidCrossEntropyLoss": _sigmoid_loss,
    "EuclideanLoss": lambda layer: {},
    "ContrastiveLoss": _neuron("contrastive_loss_param", "margin", "legacy_version"),
    "HingeLoss": lambda layer: dict(norm=caffe_pb2.HingeLossParameter.Norm.Name(layer.norm)),
    "MultinomialLogisticLoss": lambda layer: {},
    "InfogainLoss": _infogain,
    "Accuracy": _accuracy,
}


def layer_args(layer: Layer) -> Args:
    """The exported class's keyword arguments for ``layer`` (ExportError if it cannot be exported)."""
    make = ARGS.get(layer.type)
    if make is None:
        why = not_exportable.because(not_exportable.TORCH, layer.type)
        raise _refuse(layer, f"this layer type cannot be exported to PyTorch{why}")
    return make(layer)
