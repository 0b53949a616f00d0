"""Layer families: how the palette groups Caffe's layer types, what each is for, and its colour.

Qt-free. Colours come from the canvas (graph_view.style), so a type looks the same everywhere;
the groups here are the palette's. A type registered later that no family names falls into "Other".
"""

from __future__ import annotations

from dataclasses import dataclass

from graph_view import style


@dataclass(frozen=True)
class Family:
    key: str
    title: str
    types: tuple[str, ...]


FAMILIES: tuple[Family, ...] = (
    Family(
        "data",
        "Data",
        ("Input", "Data", "ImageData", "HDF5Data", "MemoryData", "DummyData", "WindowData"),
    ),
    Family(
        "vision",
        "Vision",
        ("Convolution", "Deconvolution", "InnerProduct", "Embed", "Im2col"),
    ),
    Family("pooling", "Pooling", ("Pooling", "SPP")),
    Family("normalisation", "Normalisation", ("BatchNorm", "Scale", "Bias", "LRN", "MVN")),
    Family(
        "neuron",
        "Neuron",
        (
            "ReLU",
            "PReLU",
            "ELU",
            "Sigmoid",
            "TanH",
            "Swish",
            "Clip",
            "AbsVal",
            "BNLL",
            "Power",
            "Exp",
            "Log",
            "Threshold",
            "Dropout",
        ),
    ),
    Family("recurrent", "Recurrent", ("LSTM", "RNN", "LSTMUnit")),
    Family(
        "structure",
        "Structure",
        (
            "Concat",
            "Slice",
            "Split",
            "Eltwise",
            "Flatten",
            "Reshape",
            "Crop",
            "Tile",
            "Reduction",
            "ArgMax",
            "BatchReindex",
            "Parameter",
            "Silence",
            "Filter",
        ),
    ),
    Family(
        "loss",
        "Loss & output",
        (
            "SoftmaxWithLoss",
            "Softmax",
            "Accuracy",
            "EuclideanLoss",
            "SigmoidCrossEntropyLoss",
            "HingeLoss",
            "ContrastiveLoss",
            "InfogainLoss",
            "MultinomialLogisticLoss",
            "HDF5Output",
        ),
    ),
    Family("python", "Python", ("Python",)),
)
OTHER = Family("other", "Other", ())

_BY_TYPE = {t: family for family in FAMILIES for t in family.types}

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
    "ArgMax": "Index (and value) of the top-k entries",
    "BatchReindex": "Reorders the batch by given indices",
    "Parameter": "Outputs a learned blob of a given shape",
    "Silence": "Swallows blobs nobody reads",
    "Filter": "Keeps the batch items whose selector is non-zero",
    "HDF5Output": "Writes its two bottoms to an HDF5 file as data and label",
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
}

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


def family_of(layer_type: str) -> Family:
    return _BY_TYPE.get(layer_type, OTHER)


def grouped(layer_types: list[str]) -> list[tuple[Family, list[str]]]:
    """``layer_types`` grouped by family, in palette order; families with none are left out."""
    available = set(layer_types)
    groups = [(family, [t for t in family.types if t in available]) for family in FAMILIES]
    others = sorted(t for t in available if t not in _BY_TYPE)
    groups.append((OTHER, others))
    return [(family, types) for family, types in groups if types]


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
