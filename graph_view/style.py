"""How a layer looks: its family's colours, and the canvas's metrics. Qt-free.

Which family a type belongs to is its engine class's (``Layer.family``). The colours follow what
Caffe users already read in Netron (data grey, vision blue, neuron red, pooling/normalisation
green, merge brown, Caffe's Split teal) plus loss purple and a neutral grey for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.layers import find_layer_class


@dataclass(frozen=True)
class Family:
    name: str
    colour: str  # the header fill
    tint: str  # a band or a badge background, lighter


DATA = Family("data", "#5b6472", "#e6e8ec")
VISION = Family("vision", "#2f5f9e", "#dde7f5")
NEURON = Family("neuron", "#a8332d", "#f6dedc")
POOLING = Family("pooling", "#2e7d4f", "#dcefe3")
NORMALISATION = Family("normalisation", POOLING.colour, POOLING.tint)  # Netron's green for both
RECURRENT = Family("recurrent", VISION.colour, VISION.tint)  # layers with weights, as vision's
STRUCTURE = Family("structure", "#7a5230", "#efe5da")  # Netron's merge brown
SPLIT = Family("split", "#2b7a8c", "#dcedf1")  # Caffe's fan-out copies: not a merge, so not brown
LOSS = Family("loss", "#6b3fa0", "#ebe1f6")
OTHER = Family("other", "#47505c", "#e5e7eb")
UNKNOWN = Family("unknown", "#9aa1ab", "#f1f2f4")

# The colours of each family the engine declares (``Layer.family``); Python layers look neutral.
_BY_NAME = {f.name: f for f in (DATA, VISION, NEURON, POOLING, NORMALISATION, RECURRENT, STRUCTURE, LOSS)}


def family(layer_type: str, known: bool = True) -> Family:
    cls = find_layer_class(layer_type) if known else None
    if cls is None:
        return UNKNOWN
    if layer_type == "Split":
        return SPLIT
    return _BY_NAME.get(cls.family, OTHER)


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
ASSUMED = "#b86200"  # shapes that rest on an assumption, not on the data (readable on light and dark)

# ---- metrics (scene units, at zoom 1) ----------------------------------------------------
NODE_MIN_W = 150
NODE_MAX_W = 250
HEADER_H = 24
LINE_H = 16
BAND_H = 20
CHIPS_H = 18
PORT_R = 4.5
RANK_GAP = 42  # LeNet (8 ranks) whole at a readable zoom in a 1280x800 window
NODE_GAP = 36
FONT_FAMILY = "Sans Serif"
