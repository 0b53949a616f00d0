"""How a layer looks: its family, the family's colours, and the canvas's metrics. Qt-free.

Families follow what Caffe users already read in Netron (data grey, vision blue, neuron red,
pooling/normalisation green, merge brown) plus loss purple and a neutral grey for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str
    colour: str  # the header fill
    tint: str  # a band or a badge background, lighter


DATA = Family("data", "#5b6472", "#e6e8ec")
VISION = Family("vision", "#2f5f9e", "#dde7f5")
NEURON = Family("neuron", "#a8332d", "#f6dedc")
NORM = Family("pooling", "#2e7d4f", "#dcefe3")
MERGE = Family("merge", "#7a5230", "#efe5da")
LOSS = Family("loss", "#6b3fa0", "#ebe1f6")
OTHER = Family("other", "#47505c", "#e5e7eb")
UNKNOWN = Family("unknown", "#9aa1ab", "#f1f2f4")

_TYPES = {
    VISION: "Convolution Deconvolution InnerProduct Embed Im2col SPP Crop LSTM RNN LSTMUnit",
    NEURON: "ReLU PReLU ELU Sigmoid TanH Dropout AbsVal Power BNLL Exp Log Threshold Clip Swish",
    NORM: "Pooling LRN BatchNorm Scale Bias MVN",
    MERGE: "Concat Eltwise Slice Split Flatten Reshape Tile BatchReindex Silence Filter",
    LOSS: "Accuracy Softmax ArgMax Reduction",
}
_FAMILY_OF = {t: family for family, types in _TYPES.items() for t in types.split()}


def family(layer_type: str, known: bool = True) -> Family:
    if not known:
        return UNKNOWN
    if layer_type in _FAMILY_OF:
        return _FAMILY_OF[layer_type]
    if layer_type.endswith("Data") or layer_type in ("Input", "Parameter"):
        return DATA
    if layer_type.endswith("Loss"):
        return LOSS
    return OTHER


# ---- canvas colours ----------------------------------------------------------------------
BACKGROUND = "#f7f8fa"
GRID = "#eceef2"
CARD = "#ffffff"
CARD_BORDER = "#c9ced6"
TEXT = "#1f2933"
MUTED = "#6b7684"
WIRE = "#7b8594"
WIRE_LONG = "#aab1bc"
SELECTED = "#f59e0b"
ERROR = "#d93025"
WARNING = "#e8a317"
LABEL_BG = "#f7f8fa"

# ---- metrics (scene units, at zoom 1) ----------------------------------------------------
NODE_MIN_W = 150
NODE_MAX_W = 250
HEADER_H = 24
LINE_H = 16
BAND_H = 20
CHIPS_H = 18
PORT_R = 4.5
SPLIT_H = 24
RANK_GAP = 58
NODE_GAP = 36
FONT_FAMILY = "Sans Serif"
FONT_PT = 8.5
