"""Which parameter blobs a layer has, which FillerParameter fills each, and what each filler reads.

Qt-free. A *slot* is one parameter blob of a layer: its role ("weights", "bias", ...), the dotted
path of the filler field that fills it (``convolution_param.weight_filler``) and the filler the
engine uses while that field is unset (Caffe's defaults: an unset FillerParameter is constant 0,
PReLU's slopes start at 0.25, Scale's factors at 1). Blobs no filler touches (BatchNorm's
statistics) get a slot with ``path=None`` and a note saying how they start.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.commands import SetLayerField
from app.fields import get_field
from proto import caffe_pb2

FillerParameter = caffe_pb2.FillerParameter
LayerParameter = caffe_pb2.LayerParameter

# The fields each filler reads (engine/fillers.py), in the order the panel shows them.
FIELDS: dict[str, tuple[str, ...]] = {
    "constant": ("value",),
    "uniform": ("min", "max"),
    "gaussian": ("mean", "std", "sparse"),
    "positive_unitball": (),
    "xavier": ("variance_norm",),
    "msra": ("variance_norm",),
    "bilinear": (),
}
FILLER_TYPES = tuple(FIELDS)

# Layers whose blob 0 is a weight matrix or kernel bank, and the message holding its fillers.
WEIGHT_LAYERS = {
    "Convolution": "convolution_param",
    "Deconvolution": "convolution_param",
    "InnerProduct": "inner_product_param",
    "Embed": "embed_param",
}


# Recurrent layers: Caffe's names of their blobs, in order, and whether each is a weight or a bias.
# "static" blobs exist only with a third bottom (x_static).
RECURRENT: dict[str, tuple[tuple[str, str], ...]] = {
    "LSTM": (("W_xc", "weights"), ("b_c", "bias"), ("W_xc_static", "static"), ("W_hc", "weights")),
    "RNN": (
        ("W_xh", "weights"),
        ("b_h", "bias"),
        ("W_xh_static", "static"),
        ("W_hh", "weights"),
        ("W_ho", "weights"),
        ("b_o", "bias"),
    ),
}
_STATES = {"LSTM": 2, "RNN": 1}  # exposed hidden states (h_0, c_0) that come as extra bottoms


@dataclass(frozen=True)
class Slot:
    role: str
    path: str | None  # the FillerParameter field; None: no filler fills this blob
    default: FillerParameter | None = None  # what the engine uses while ``path`` is unset
    note: str = ""
    kind: str = ""  # "weights" or "bias" where the role is a name of its own (W_xc); else the role

    @property
    def family(self) -> str:
        return self.kind or self.role


def _filler(value: float = 0.0) -> FillerParameter:
    """A constant filler: every default Caffe gives a learned blob is one."""
    return FillerParameter(type="constant", value=value)


def slots(layer: LayerParameter) -> list[Slot]:
    """The parameter blobs ``layer`` learns, in the order of ``layer.blobs``."""
    kind = layer.type
    if kind in WEIGHT_LAYERS:
        field = WEIGHT_LAYERS[kind]
        found = [Slot("weights", f"{field}.weight_filler", _filler())]
        if getattr(layer, field).bias_term:
            found.append(Slot("bias", f"{field}.bias_filler", _filler()))
        return found
    if kind in RECURRENT:
        return _recurrent(layer)
    if kind == "PReLU":
        return [Slot("slopes", "prelu_param.filler", _filler(0.25))]
    if kind == "Scale":
        p, found = layer.scale_param, []
        if len(layer.bottom) < 2:  # a second bottom supplies the factors: nothing learned
            found.append(Slot("scale", "scale_param.filler", _filler(1)))
        if p.bias_term:
            found.append(Slot("bias", "scale_param.bias_filler", _filler()))
        return found
    if kind == "Bias":
        return [Slot("bias", "bias_param.filler", _filler())] if len(layer.bottom) < 2 else []
    if kind == "BatchNorm":
        note = "a running statistic: starts at 0 and is accumulated, not learned"
        return [
            Slot("mean", None, note=note),
            Slot("variance", None, note=note),
            Slot("scale factor", None, note="the moving-average normaliser: starts at 0"),
        ]
    if kind == "Parameter":
        return [Slot("value", None, note="starts at 0 (Parameter has no filler)")]
    return []


def _recurrent(layer: LayerParameter) -> list[Slot]:
    """LSTM / RNN: every weight matrix draws from weight_filler, every bias from bias_filler."""
    exposed = _STATES[layer.type] if layer.recurrent_param.expose_hidden else 0
    static = len(layer.bottom) > 2 + exposed
    found = []
    for name, kind in RECURRENT[layer.type]:
        if kind == "static" and not static:
            continue
        kind = "bias" if kind == "bias" else "weights"
        path = f"recurrent_param.{'bias' if kind == 'bias' else 'weight'}_filler"
        found.append(Slot(name, path, _filler(), kind=kind))
    return found


def is_set(layer: LayerParameter, slot: Slot) -> bool:
    if slot.path is None:
        return False
    holder, name = slot.path.rsplit(".", 1)
    return get_field(layer, holder).HasField(name)


def effective(layer: LayerParameter, slot: Slot) -> FillerParameter | None:
    """The filler the engine will use for ``slot``: the layer's own, or the default while unset."""
    if slot.path is None:
        return None
    filler = FillerParameter()
    filler.CopyFrom(get_field(layer, slot.path) if is_set(layer, slot) else slot.default or FillerParameter())
    return filler


def with_type(old: FillerParameter, type_name: str) -> FillerParameter:
    """A ``type_name`` filler keeping the fields of ``old`` that the new type reads too."""
    new = FillerParameter(type=type_name)
    for field in FIELDS.get(type_name, ()):
        if old.HasField(field):
            setattr(new, field, getattr(old, field))
    return new


def with_field(old: FillerParameter, field: str, value: float | int) -> FillerParameter:
    new = FillerParameter()
    new.CopyFrom(old)
    new.type = old.type  # written out, so the prototxt names the filler it keeps
    setattr(new, field, value)
    return new


def describe(filler: FillerParameter) -> str:
    """``gaussian(std=0.01)``: the filler in a few words, for undo texts and captions."""
    names = caffe_pb2.FillerParameter.VarianceNorm.Name
    parts = []
    for field in FIELDS.get(filler.type, ()):
        if not filler.HasField(field):
            continue
        value = getattr(filler, field)
        parts.append(f"{field}={names(value) if field == 'variance_norm' else f'{value:g}'}")
    return f"{filler.type}({', '.join(parts)})" if parts else filler.type


def set_filler(index: int, layer: LayerParameter, slot: Slot, filler: FillerParameter) -> SetLayerField:
    """The undoable edit writing ``filler`` into the slot's field of the layer at ``index``."""
    assert slot.path is not None
    command = SetLayerField(index, slot.path, filler)
    command.text = f"{layer.name}: {slot.role} filler {describe(filler)}"
    return command
