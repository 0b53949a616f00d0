"""The one line of key settings a node shows (``20 · 5x5 /1``), and how numbers are written. Qt-free.

Only what a designer reads at a glance: set fields, never an empty ``pad =``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from engine.layers import find_layer_class
from proto import caffe_pb2

LayerParameter = caffe_pb2.LayerParameter
TIMES = "×"


def dims(shape: Sequence[int]) -> str:
    return TIMES.join(str(d) for d in shape) if shape else "scalar"


def count(n: float) -> str:
    """1234 -> '1.2 k', 60_200_000 -> '60.2 M'."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            value = n / size
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{n:.0f}"


def _number(x: float) -> str:
    return f"{x:g}"


def _hw(values: Sequence[int], h: int = 0, w: int = 0, default: int | None = None) -> tuple[int, ...]:
    if h or w:
        return (h, w)
    if values:
        return tuple(values) if len(values) > 1 else (values[0], values[0])
    return () if default is None else (default, default)


def _conv(layer: LayerParameter) -> str:
    p = layer.convolution_param
    kernel = _hw(p.kernel_size, p.kernel_h, p.kernel_w)
    stride = _hw(p.stride, p.stride_h, p.stride_w, 1)
    pad = _hw(p.pad, p.pad_h, p.pad_w, 0)
    parts = [str(p.num_output), dims(kernel) if kernel else "?"]
    text = f"{parts[0]} · {parts[1]} /{stride[0] if len(set(stride)) == 1 else dims(stride)}"
    if any(pad):
        text += f" pad {pad[0] if len(set(pad)) == 1 else dims(pad)}"
    if p.group > 1:
        text += f" g{p.group}"
    if p.dilation and any(d > 1 for d in p.dilation):
        text += f" dil {p.dilation[0]}"
    if not p.bias_term:
        text += " no bias"
    return text


def _pool(layer: LayerParameter) -> str:
    p = layer.pooling_param
    kind = caffe_pb2.PoolingParameter.PoolMethod.Name(p.pool)
    if p.global_pooling:
        return f"{kind} global"
    kernel = _hw([p.kernel_size] if p.HasField("kernel_size") else [], p.kernel_h, p.kernel_w)
    stride = _hw([p.stride], p.stride_h, p.stride_w)
    text = f"{kind} {dims(kernel)} /{stride[0]}"
    pad = p.pad or p.pad_h or p.pad_w
    return text + (f" pad {pad}" if pad else "")


def _data(layer: LayerParameter) -> str:
    cls = find_layer_class(layer.type)
    p = getattr(layer, cls.params[0] if cls is not None and cls.params else "data_param")  # its own message
    source = os.path.basename(p.source.rstrip("/")) if p.source else "no source"
    text = f"{source} · batch {p.batch_size}"
    crop = layer.transform_param.crop_size
    return text + (f" · crop {crop}" if crop else "")


def _input(layer: LayerParameter) -> str:
    return ", ".join(dims(s.dim) for s in layer.input_param.shape) or "no shape"


def _eltwise(layer: LayerParameter) -> str:
    p = layer.eltwise_param
    op = caffe_pb2.EltwiseParameter.EltwiseOp.Name(p.operation)
    return op + (f" {', '.join(_number(c) for c in p.coeff)}" if p.coeff else "")


def _axis(message, default: int = 1) -> str:
    return f"axis {message.axis}" if message.HasField("axis") and message.axis != default else ""


def _slice(layer: LayerParameter) -> str:
    p = layer.slice_param
    points = f"at {', '.join(map(str, p.slice_point))}" if p.slice_point else ""
    return " ".join(part for part in (_axis(p), points) if part)


def _lrn(layer: LayerParameter) -> str:
    p = layer.lrn_param
    region = "within" if p.norm_region == caffe_pb2.LRNParameter.WITHIN_CHANNEL else "across"
    return f"{p.local_size} {region} · α {_number(p.alpha)} β {_number(p.beta)}"


def _power(layer: LayerParameter) -> str:
    p = layer.power_param
    return f"({_number(p.shift)} + {_number(p.scale)}x)^{_number(p.power)}"


def _reshape(layer: LayerParameter) -> str:
    return dims(layer.reshape_param.shape.dim)


def _dummy(layer: LayerParameter) -> str:
    return ", ".join(dims(s.dim) for s in layer.dummy_data_param.shape)


def _loss(layer: LayerParameter) -> str:
    parts = []
    if layer.loss_param.HasField("ignore_label"):
        parts.append(f"ignore {layer.loss_param.ignore_label}")
    if layer.loss_weight and any(w != 1 for w in layer.loss_weight):
        parts.append(f"weight {', '.join(_number(w) for w in layer.loss_weight)}")
    return " · ".join(parts)


def _recurrent(layer: LayerParameter) -> str:
    p = layer.recurrent_param
    return str(p.num_output) + (" · exposed states" if p.expose_hidden else "")


def _python(layer: LayerParameter) -> str:
    p = layer.python_param
    where = ".".join(part for part in (p.module, p.layer) if part) or "no module"
    text = p.param_str if len(p.param_str) <= 24 else p.param_str[:23] + "…"
    return where + (f" · {text}" if text else "")


def _batch_norm(layer: LayerParameter) -> str:
    p = layer.batch_norm_param
    return "global stats" if p.HasField("use_global_stats") and p.use_global_stats else ""


_SUMMARY: dict[str, Callable[[LayerParameter], str]] = {
    "Convolution": _conv,
    "Deconvolution": _conv,
    "InnerProduct": lambda l: str(l.inner_product_param.num_output),
    "Embed": lambda l: f"{l.embed_param.input_dim} → {l.embed_param.num_output}",
    "Pooling": _pool,
    "Data": _data,
    "ImageData": _data,
    "HDF5Data": _data,
    "WindowData": _data,
    "HDF5Output": lambda l: os.path.basename(l.hdf5_output_param.file_name) or "no file",
    "LSTM": _recurrent,
    "RNN": _recurrent,
    "Python": _python,
    "Input": _input,
    "DummyData": _dummy,
    "MemoryData": lambda l: f"batch {l.memory_data_param.batch_size}",
    "Eltwise": _eltwise,
    "Concat": lambda l: _axis(l.concat_param),
    "Slice": _slice,
    "Softmax": lambda l: _axis(l.softmax_param),
    "LRN": _lrn,
    "Dropout": lambda l: _number(l.dropout_param.dropout_ratio),
    "ReLU": lambda l: f"leaky {_number(l.relu_param.negative_slope)}" if l.relu_param.negative_slope else "",
    "Power": _power,
    "Reshape": _reshape,
    "Flatten": lambda l: _axis(l.flatten_param),
    "Crop": lambda l: f"axis {l.crop_param.axis} · offset {', '.join(map(str, l.crop_param.offset)) or 0}",
    "Scale": lambda l: "+ bias" if l.scale_param.bias_term else "",
    "BatchNorm": _batch_norm,
    "Accuracy": lambda l: f"top-{l.accuracy_param.top_k}" if l.accuracy_param.top_k > 1 else "",
}


def settings(layer: LayerParameter) -> str:
    """The layer's key settings in a few characters, or '' when it has none worth showing."""
    make = _SUMMARY.get(layer.type)
    text = make(layer) if make is not None else ""
    if layer.type.endswith("Loss"):
        text = _loss(layer)
    return text


def param_notes(layer: LayerParameter) -> str:
    """Shared weights and learning-rate multipliers: what Netron never shows."""
    notes = []
    shared = [spec.name for spec in layer.param if spec.name]
    if shared:
        notes.append(f"shares {', '.join(shared)}")
    lrs = [spec.lr_mult for spec in layer.param if spec.HasField("lr_mult")]
    if lrs and all(lr == 0 for lr in lrs):
        notes.append("frozen")
    elif lrs and any(lr not in (1, 2) for lr in lrs):
        notes.append("lr " + "/".join(_number(lr) for lr in lrs))
    return " · ".join(notes)


def flops(n: float) -> str:
    return count(n) + "FLOPs" if n >= 1000 else f"{n:.0f} FLOPs"


def stats(params: int, flop_count: float) -> str:
    parts = []
    if params:
        parts.append(f"{count(params)} params".replace("  ", " "))
    if flop_count:
        parts.append(flops(flop_count))
    return " · ".join(parts)
