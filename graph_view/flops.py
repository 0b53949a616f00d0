"""Floating-point operations of one forward pass, per image, from a layer's shapes. Qt-free.

A multiply-add counts as two operations (the convention of the papers that quote GFLOPs). Copies
(Concat, Slice, Split, Reshape, data layers) cost nothing; element-wise layers cost a few
operations per element. The batch axis (axis 0) is divided out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from proto import caffe_pb2

Shape = tuple[int, ...]

# Operations per output element for the element-wise layers.
_PER_ELEMENT = {
    "ReLU": 1, "PReLU": 2, "ELU": 3, "Sigmoid": 4, "TanH": 4, "AbsVal": 1, "Power": 3, "BNLL": 4,
    "Exp": 2, "Log": 2, "Threshold": 1, "Clip": 2, "Swish": 5, "Dropout": 1,
    "BatchNorm": 2, "Bias": 1, "MVN": 4, "Softmax": 3, "Accuracy": 1, "ArgMax": 1,
}  # fmt: skip

# The types counted by a formula of their own (forward_flops's branches).
FORMULAS = frozenset({
    "Convolution", "Deconvolution", "InnerProduct", "LSTM", "RNN", "Pooling", "LRN", "Eltwise",
    "Scale", "SoftmaxWithLoss", "EuclideanLoss", "SigmoidCrossEntropyLoss", "HingeLoss",
    "ContrastiveLoss", "InfogainLoss", "MultinomialLogisticLoss",
})  # fmt: skip

# The types counted as free: data and copies, lookups and reorderings, and the few whose cost is
# not estimated (a Python layer's is unknown; SPP, Im2col, Reduction, LSTMUnit are rare and cheap
# beside the convolutions around them).
FREE = frozenset({
    "Input", "Data", "ImageData", "HDF5Data", "MemoryData", "DummyData", "WindowData", "HDF5Output",
    "Concat", "Slice", "Split", "Flatten", "Reshape", "Crop", "Tile", "Silence", "Parameter",
    "Embed", "BatchReindex", "Filter", "Python", "SPP", "Im2col", "Reduction", "LSTMUnit",
})  # fmt: skip


def has_rule(layer_type: str) -> bool:
    """Whether ``layer_type``'s cost is declared: a formula, a per-element count, or free."""
    return layer_type in FORMULAS or layer_type in _PER_ELEMENT or layer_type in FREE


def _count(shape: Shape | None) -> int:
    return math.prod(shape) if shape is not None else 0


def forward_flops(
    layer: caffe_pb2.LayerParameter,
    bottoms: Sequence[Shape | None],
    tops: Sequence[Shape | None],
    params: Sequence[Shape],
) -> float:
    """FLOPs for one image (0 when the shapes are unknown)."""
    first = next((s for s in (*tops, *bottoms) if s), None)
    if first is None:
        return 0.0
    batch = max(first[0], 1)
    out = _count(tops[0]) if tops else 0
    kind = layer.type
    if kind in ("Convolution", "Deconvolution") and params and bottoms and bottoms[0] and tops and tops[0]:
        axis = layer.convolution_param.axis % len(bottoms[0])
        # Convolution walks the output positions, deconvolution the input ones.
        where = tops[0] if kind == "Convolution" else bottoms[0]
        positions = _count(where[:axis]) * _count(where[axis + 1 :])
        total = 2.0 * positions * _count(params[0]) + (out if len(params) > 1 else 0)
    elif kind == "InnerProduct" and params and bottoms and bottoms[0]:
        rows = _count(bottoms[0]) // max(_count(params[0]) // layer.inner_product_param.num_output, 1)
        total = 2.0 * rows * _count(params[0]) + (out if len(params) > 1 else 0)
    elif kind in ("LSTM", "RNN") and params and tops and tops[0]:
        # Every timestep: the matrix products with each stream's input and state, and the gates.
        steps_streams = _count(tops[0][:2])
        matrices = sum(_count(p) for p in params if len(p) == 2)
        total = 2.0 * steps_streams * matrices + out * (8 if kind == "LSTM" else 4)
    elif kind == "Pooling" and bottoms and bottoms[0] and tops and tops[0]:
        p = layer.pooling_param
        if p.global_pooling:
            total = _count(bottoms[0])
        else:
            kh = p.kernel_h or p.kernel_size
            kw = p.kernel_w or p.kernel_size
            total = out * kh * kw
    elif kind == "LRN":
        total = out * (layer.lrn_param.local_size + 3)
    elif kind == "Eltwise":
        total = out * max(len(bottoms) - 1, 1) * (2 if layer.eltwise_param.coeff else 1)
    elif kind == "Scale":
        total = out * (2 if layer.scale_param.bias_term else 1)
    elif kind.endswith("Loss") and bottoms and bottoms[0]:
        total = _count(bottoms[0]) * (4 if kind == "SoftmaxWithLoss" else 3)
    else:
        total = out * _PER_ELEMENT.get(kind, 0)
    return total / batch
