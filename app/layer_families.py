"""Layer families as the palette shows them: their titles, what each type is for, and its colour.

Qt-free. Which family a type belongs to is declared by its engine class (``Layer.family``); this
module only names the families, describes the types and orders them. Colours come from the canvas
(graph_view.style), so a type looks the same everywhere. A type of no known family is "Other".
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.layers import find_layer_class
from engine.layers.facts import FAMILIES
from graph_view import style


@dataclass(frozen=True)
class Family:
    key: str  # the engine's name of the family (engine.layers.facts.FAMILIES)
    title: str


# What the palette calls each family the engine declares.
TITLES = {
    "data": "Data",
    "vision": "Vision",
    "pooling": "Pooling",
    "normalisation": "Normalisation",
    "neuron": "Neuron",
    "recurrent": "Recurrent",
    "structure": "Structure",
    "loss": "Loss & output",
    "python": "Python",
}
OTHER = Family("other", "Other")


# One line each: what the layer does, in the words a designer searches with.
DESCRIPTIONS = {
    "Input": "Feeds blobs of a fixed shape that the caller fills (deployment nets)",
    "Data": "Batches of Datum records from an LMDB or LevelDB database",
    "ImageData": "Images listed in a text file with their labels",
    "HDF5Data": "Datasets from the HDF5 files listed in a text file",
    "MemoryData": "Batches from arrays handed over in memory",
    "DummyData": "Constant or random blobs of a given shape: no data set needed",
    "WindowData": "Object-detection windows cut from the images of an R-CNN window file",
    "Convolution": "Learned filters slid over the image (conv)",
    "Deconvolution": "Transposed convolution: upsamples with learned filters",
    "InnerProduct": "Fully connected layer: every output sees every input (fc, dense, linear)",
    "Embed": "Looks up a learned vector for each integer id",
    "Im2col": "Unrolls image patches into columns",
    "LSTM": "Long short-term memory over T timesteps (sequences, with cont flags)",
    "RNN": "Simple recurrent layer: tanh hidden state and tanh output",
    "LSTMUnit": "One LSTM timestep: the cell and hidden update",
    "Pooling": "Max, average or stochastic pooling over windows",
    "SPP": "Spatial pyramid pooling to a fixed-length output",
    "BatchNorm": "Normalises each channel by batch statistics",
    "Scale": "Learned per-channel scale (and bias): pairs with BatchNorm",
    "Bias": "Adds a learned (or given) per-channel bias",
    "LRN": "Local response normalisation across or within channels",
    "MVN": "Mean-variance normalisation of each sample",
    "ReLU": "max(0, x), or a leaky slope below 0",
    "PReLU": "ReLU with a learned slope below 0",
    "ELU": "Exponential linear unit",
    "Sigmoid": "1 / (1 + exp(-x))",
    "TanH": "tanh(x)",
    "Swish": "x * sigmoid(beta x)",
    "Clip": "Clamps values to [min, max]",
    "AbsVal": "|x|",
    "BNLL": "log(1 + exp(x))",
    "Power": "(shift + scale x) ^ power",
    "Exp": "base ^ (shift + scale x)",
    "Log": "log_base(shift + scale x)",
    "Threshold": "1 above the threshold, else 0",
    "Dropout": "Zeroes a random fraction of inputs while training",
    "Concat": "Joins blobs along an axis (merge)",
    "Slice": "Cuts a blob into pieces along an axis",
    "Split": "Copies a blob to several consumers (Caffe inserts these itself)",
    "Eltwise": "Element-wise sum, product or max of blobs (residual merge)",
    "Flatten": "Collapses axes into one",
    "Reshape": "Gives a blob a new shape without copying",
    "Crop": "Crops a blob to the size of another",
    "Tile": "Repeats a blob along an axis",
    "Reduction": "Sums, means or norms over trailing axes",
    "BatchReindex": "Reorders the batch by given indices",
    "Parameter": "Outputs a learned blob of a given shape",
    "Silence": "Swallows blobs nobody reads",
    "Filter": "Keeps the batch items whose selector is non-zero",
    "Python": "Runs a Python class of yours (python_param module / layer / param_str)",
    "SoftmaxWithLoss": "Softmax then multinomial logistic loss: classification",
    "Softmax": "Normalised exponentials: class probabilities",
    "Accuracy": "Fraction of correct top-k predictions (test metric)",
    "EuclideanLoss": "Sum of squared differences / 2N: regression",
    "SigmoidCrossEntropyLoss": "Cross-entropy of independent sigmoid outputs: multi-label",
    "HingeLoss": "One-vs-all hinge loss (L1 or L2): SVM-style classification",
    "ContrastiveLoss": "Pulls similar pairs together, pushes others apart (siamese)",
    "InfogainLoss": "Multinomial logistic loss weighted by an infogain matrix",
    "MultinomialLogisticLoss": "-log p[label] of given probabilities",
    "ArgMax": "Index (and value) of the top-k entries",
    "HDF5Output": "Writes its two bottoms to an HDF5 file as data and label",
}

_RANK = {layer_type: rank for rank, layer_type in enumerate(DESCRIPTIONS)}

# Extra words a search should find a type by.
KEYWORDS = {
    "InnerProduct": "fc fully connected dense linear ip",
    "Convolution": "conv filter kernel",
    "Deconvolution": "deconv upsample transposed",
    "Pooling": "pool max average maxpool",
    "BatchNorm": "bn batch normalization",
    "LRN": "local response normalization",
    "Eltwise": "add sum residual merge product",
    "Concat": "concatenate merge join",
    "SoftmaxWithLoss": "cross entropy classification",
    "Dropout": "regularization",
    "LSTM": "recurrent sequence rnn memory",
    "RNN": "recurrent sequence",
    "Python": "custom user layer script",
}


def colour_of(layer_type: str) -> str:
    """The colour the canvas gives this type's boxes, so palette, inspector and canvas agree."""
    return style.family(layer_type).colour


def _order(layer_type: str) -> tuple[int, str]:
    """Within a family: the order the descriptions are written in (the usual first), then by name."""
    return (_RANK.get(layer_type, len(_RANK)), layer_type)


def grouped(layer_types: list[str]) -> list[tuple[Family, list[str]]]:
    """``layer_types`` grouped by family, in palette order; families with none are left out."""
    groups: dict[str, list[str]] = {key: [] for key in (*FAMILIES, OTHER.key)}
    for layer_type in sorted(set(layer_types), key=_order):
        groups[_key(layer_type)].append(layer_type)
    return [(_family(key), types) for key, types in groups.items() if types]


def family_of(layer_type: str) -> Family:
    return _family(_key(layer_type))


def _key(layer_type: str) -> str:
    cls = find_layer_class(layer_type)
    return cls.family if cls is not None and cls.family in FAMILIES else OTHER.key


def _family(key: str) -> Family:
    return OTHER if key == OTHER.key else Family(key, TITLES.get(key, key.title()))


def matches(layer_type: str, query: str) -> bool:
    """Whether every word of ``query`` appears in the type, its family, description or keywords."""
    words = query.lower().split()
    if not words:
        return True
    family = family_of(layer_type)
    haystack = " ".join(
        (layer_type, family.title, DESCRIPTIONS.get(layer_type, ""), KEYWORDS.get(layer_type, ""))
    ).lower()
    return all(word in haystack for word in words)
