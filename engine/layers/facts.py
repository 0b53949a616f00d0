"""What a layer type is before any blob exists: its family, the blobs it learns and how they start.

Qt-free and cheap: the app's palette, inspector, filler panel and edit checks, and the canvas's
colours and shapes, read these from the registered classes (``Layer.family``, ``Layer.params``,
``Layer.learnable_blobs``, ``Layer.param_shapes``, ``Layer.static_problems``) instead of keeping
tables of their own, so a new layer type is one engine file and its test.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from proto import caffe_pb2

# The families a layer type belongs to, in the order a palette lists them.
FAMILIES = (
    "data",
    "vision",
    "pooling",
    "normalisation",
    "neuron",
    "recurrent",
    "structure",
    "loss",
    "python",
)


@dataclass(frozen=True)
class ParamBlob:
    """One learnable blob of a layer, in the order of ``layer.blobs``.

    ``path`` is the dotted path of the FillerParameter field that fills it
    (``convolution_param.weight_filler``), or None when no filler touches it (BatchNorm's
    statistics; ``note`` then says how it starts). ``default`` is what the layer uses while that
    field is unset (Caffe's: an unset FillerParameter is constant 0, PReLU's slopes start at 0.25).
    ``kind`` is "weights" or "bias" where the role is a name of its own (an LSTM's W_xc).
    """

    role: str
    path: str | None
    default: caffe_pb2.FillerParameter | None = None
    note: str = ""
    kind: str = ""

    @property
    def family(self) -> str:
        return self.kind or self.role


def constant(value: float = 0.0) -> caffe_pb2.FillerParameter:
    """A constant filler: every default Caffe gives a learned blob is one."""
    return caffe_pb2.FillerParameter(type="constant", value=value)


def weights_and_bias(field: str, bias_term: bool) -> list[ParamBlob]:
    """The blobs of a layer with a weight matrix (or kernel bank) and an optional bias."""
    found = [ParamBlob("weights", f"{field}.weight_filler", constant())]
    if bias_term:
        found.append(ParamBlob("bias", f"{field}.bias_filler", constant()))
    return found


def positive(name: str, values: float | Iterable[float]) -> Iterator[str]:
    """A problem for each of ``values`` that is not above zero."""
    for value in values if isinstance(values, Iterable) else [values]:
        if value <= 0:
            yield f"{name} must be positive (got {value})"
