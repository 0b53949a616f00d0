"""The shapes a data layer's tops would have when its source cannot be read. Qt-free.

Nearly every downloaded net names LMDBs, HDF5 lists or image lists that are not on this machine;
its shapes still follow from what is at hand. For each data layer, in this order:

1. a shape the user typed for a top ("assumed input shape": the inspector, ``--input-shape``);
   then the bundled MNIST's, whose shapes are facts (a Data layer naming Caffe's MNIST LMDBs that
   Train will make from the bundled copy: engine/data/bundled.py);
2. the shapes recorded the last time its source was read (kept in the layout sidecar);
3. a deploy net beside the file (``deploy.prototxt`` first, then the other nets in the folder)
   whose Input feeds the same layers as this layer's first top: its C, H, W with this layer's
   batch size;
4. what the layer itself says: ``batch_size``; ``crop_size``, else ``new_height``/``new_width``,
   else the mean file's size; channels from a ``mean_value`` list (one per channel), the mean
   file, ``is_color``, ``force_color``/``force_gray``, or WindowData's colour images.

Whatever rule gives the shape is kept with it (``Assumption.origin`` and ``reason``), so the canvas
can mark the shape as assumed and say where it came from. Typed shapes are one per top blob name;
recorded ones are keyed by phase and layer name (``record_key``), since a TRAIN and a TEST layer
often share both their name and their tops.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.data.paths import DataPaths
from proto import caffe_pb2

Shape = tuple[int, ...]
LayerParameter = caffe_pb2.LayerParameter

# The bottomless layers that read a source (MemoryData and Input read none: they always have shapes).
SOURCE_TYPES = frozenset({"Data", "ImageData", "HDF5Data", "WindowData"})
TYPED, RECORDED, DEPLOY, LAYER = "typed", "recorded", "deploy", "layer"
BUNDLED = "bundled"  # not an assumption: the bundled data's shapes, known before it is made
_MAX_NEIGHBOURS = 24  # nets beside the file that are looked into for a deploy net
_MAX_BYTES = 4 << 20


@dataclass(frozen=True)
class Assumption:
    """Shapes for a data layer's tops (None where still unknown), and where they came from."""

    tops: tuple[Shape | None, ...]
    origin: str  # TYPED, BUNDLED, RECORDED, DEPLOY or LAYER
    reason: str  # "crop_size 224, 3 mean_values and batch_size 32"

    @property
    def complete(self) -> bool:
        return all(s is not None for s in self.tops)

    @property
    def fact(self) -> bool:
        """The shapes are the data's own (the bundled MNIST), not a guess: nothing to warn of."""
        return self.origin == BUNDLED

    @property
    def label(self) -> str:
        """A few words for the box: ``"shapes assumed from deploy.prototxt"``."""
        if self.origin == BUNDLED:
            return "the bundled MNIST"
        if not self.complete:
            return "data shape unknown: type it in the inspector"
        if self.origin == DEPLOY:
            return f"shapes assumed from {self.reason.split(' (')[0]}"
        return {
            TYPED: "shapes assumed (typed)",
            RECORDED: "shapes as last read (data absent)",
        }.get(self.origin, "shapes assumed from its fields")

    def describe(self) -> str:
        """``"assumed from the layer's crop_size 224, ..."``: the words a tooltip or a CLI line uses."""
        return f"from {self.reason}" if self.fact else f"assumed from {self.reason}"


@dataclass
class Hints:
    """What is known about the data layers of one net beyond their own fields. ``deploy`` is
    looked up beside ``net_path`` the first time it is needed (``deploy_for``)."""

    typed: dict[str, Shape] = field(default_factory=dict)  # top blob -> the user's shape
    recorded: dict[str, list[Shape]] = field(default_factory=dict)  # record_key -> top shapes
    net_path: str | None = None
    data_paths: DataPaths | None = None  # where its data files are looked for; None: beside net_path
    deploy: Mapping[str, tuple[Shape, str]] | None = None  # given: top blob -> (input shape, file name)
    _found: tuple[object, dict[str, tuple[Shape, str]]] | None = field(
        default=None, repr=False, compare=False
    )

    def deploy_for(self, layers: Sequence[LayerParameter]) -> Mapping[str, tuple[Shape, str]]:
        """``deploy`` when given, else what ``deploy_inputs`` finds (again only when the layers
        the data feeds change)."""
        if self.deploy is not None:
            return self.deploy
        wanted, body = _wanted(layers), _body(layers)
        if self._found is None or self._found[0] != (wanted, body):
            self._found = ((wanted, body), _deploy_inputs(wanted, self.net_path, body))
        return self._found[1]


def record_key(layer: LayerParameter, phase: int) -> str:
    return f"{caffe_pb2.Phase.Name(phase)}/{layer.name}"


def reads_source(layer: LayerParameter) -> bool:
    return layer.type in SOURCE_TYPES and not layer.bottom


def assume(
    layer: LayerParameter, phase: int, hints: Hints | None, layers: Sequence[LayerParameter] = ()
) -> Assumption | None:
    """Shapes for ``layer``'s tops by the rules above; None when no rule knows anything.
    ``layers``: the net it is in (a deploy net beside must feed the same layers)."""
    hints = hints or Hints()
    typed = [hints.typed.get(top) for top in layer.top]
    if any(s is not None for s in typed):
        filled = _with_labels(layer, typed, typed[0][0] if typed[0] else None)
        names = ", ".join(f"{t}={_dims(s)}" for t, s in zip(layer.top, typed) if s is not None)
        return Assumption(tuple(filled), TYPED, f"the shape typed for it ({names})")
    from engine.data.bundled import SOURCE_WORDS, bundled_tops

    bundled = bundled_tops(layer)
    if bundled is not None:
        return Assumption(tuple(bundled), BUNDLED, SOURCE_WORDS)
    recorded = hints.recorded.get(record_key(layer, phase))
    if recorded is not None and len(recorded) == len(layer.top):
        return Assumption(
            tuple(tuple(s) for s in recorded), RECORDED, "the shapes recorded when its source was last read"
        )
    batch = _batch_size(layer)
    deploy = hints.deploy_for(layers)
    if layer.top and layer.top[0] in deploy and batch:
        shape, where = deploy[layer.top[0]]
        data = (batch, *shape[1:])
        return Assumption(
            tuple(_with_labels(layer, [data], batch)), DEPLOY, f"{where} (with batch_size {batch})"
        )
    return _from_layer(layer, batch)


def as_inputs(net: caffe_pb2.NetParameter, tops: Mapping[str, Sequence[Shape]]) -> caffe_pb2.NetParameter:
    """A copy of ``net`` whose data layers named in ``tops`` are Input layers of those top shapes
    (their include/exclude rules kept): a net the engine builds without the data."""
    copy = caffe_pb2.NetParameter()
    copy.CopyFrom(net)
    for layer in copy.layer:
        shapes = tops.get(layer.name)
        if shapes is None or not reads_source(layer) or len(shapes) != len(layer.top):
            continue
        for name in (
            "data_param",
            "image_data_param",
            "hdf5_data_param",
            "window_data_param",
            "transform_param",
        ):
            layer.ClearField(name)
        layer.type = "Input"
        for shape in shapes:
            layer.input_param.shape.add().dim.extend(shape)
    return copy


def _dims(shape: Shape) -> str:
    return ",".join(str(d) for d in shape)


def _batch_size(layer: LayerParameter) -> int:
    kind = layer.type
    if kind == "Data":
        return layer.data_param.batch_size
    if kind == "ImageData":
        return layer.image_data_param.batch_size
    if kind == "HDF5Data":
        return layer.hdf5_data_param.batch_size
    if kind == "WindowData":
        return layer.window_data_param.batch_size
    return 0


def _with_labels(
    layer: LayerParameter, shapes: Sequence[Shape | None], batch: int | None
) -> list[Shape | None]:
    """``shapes`` for the first tops; a Data/ImageData/WindowData label top is (N,)."""
    out = list(shapes) + [None] * (len(layer.top) - len(shapes))
    if layer.type != "HDF5Data" and len(out) > 1 and out[1] is None and batch:
        out[1] = (batch,)
    return out


def mean_file_shape(layer: LayerParameter) -> tuple[Shape | None, str | None]:
    """(C, H, W) of the layer's mean file, or None and why it could not be read."""
    t = layer.transform_param
    if not t.HasField("mean_file"):
        return None, None
    from engine.data.errors import DataError
    from engine.data.transformer import load_mean_file

    try:
        return tuple(int(d) for d in load_mean_file(t.mean_file).shape), None
    except DataError as exc:
        return None, str(exc)


def _from_layer(layer: LayerParameter, batch: int) -> Assumption | None:
    t, said = layer.transform_param, []
    mean, _ = mean_file_shape(layer)
    channels = 0
    if len(t.mean_value) > 1:
        channels = len(t.mean_value)
        said.append(f"{channels} mean_values")
    elif mean is not None:
        channels = mean[0]
        said.append(f"{'x'.join(map(str, mean))} mean file")
    elif layer.type == "ImageData":
        channels = 3 if layer.image_data_param.is_color else 1
        said.append(f"is_color {'true' if layer.image_data_param.is_color else 'false'}")
    elif layer.type == "WindowData":
        channels = 3
        said.append("colour windows")
    elif t.force_color or t.force_gray:
        channels = 3 if t.force_color else 1
        said.append("force_color" if t.force_color else "force_gray")
    size: tuple[int, int] | None = None
    p = layer.image_data_param
    if t.crop_size:
        size = (t.crop_size, t.crop_size)
        said.append(f"crop_size {t.crop_size}")
    elif layer.type == "ImageData" and p.new_height and p.new_width:
        size = (p.new_height, p.new_width)
        said.append(f"new_height {p.new_height} and new_width {p.new_width}")
    elif mean is not None:
        size = (mean[1], mean[2])
    if batch:
        said.append(f"batch_size {batch}")
    if not said:
        return None
    data = (batch, channels, *size) if batch and channels and size else None
    tops = _with_labels(layer, [data], batch) if layer.type != "HDF5Data" else [None] * len(layer.top)
    reason = "the layer's " + (", ".join(said[:-1]) + " and " + said[-1] if len(said) > 1 else said[0])
    return Assumption(tuple(tops), LAYER, reason)


def how_to_give(layer: LayerParameter) -> str:
    """How a user gives the shapes no rule found: words for a tooltip, the Problems list, the CLI."""
    top = layer.top[0] if layer.top else "data"
    return f"type an assumed input shape in the inspector (main.py: --input-shape {top}=N,C,H,W)"


def parse_shape(text: str) -> Shape:
    """``"32,3,224,224"`` (or ``"32x3x224x224"``) as a shape; ValueError names what is wrong."""
    if not text.strip():
        raise ValueError("give the dimensions, e.g. 32,3,224,224")
    try:
        dims = tuple(int(p) for p in re.split(r"\s*[,x]\s*|\s+", text.strip()))
    except ValueError:
        raise ValueError(f"'{text}' is not a list of whole numbers such as 32,3,224,224") from None
    if any(d <= 0 for d in dims):
        raise ValueError(f"'{text}': every dimension must be positive")
    if math.prod(dims) > 2**40:
        raise ValueError(f"'{text}' is larger than any blob could be")
    return dims


# ---- a deploy net beside the file -------------------------------------------------------------

Feeds = frozenset[tuple[str, str]]  # (name, type) of layers
_NEIGHBOURS: dict[tuple[str, int, int], tuple[dict[str, tuple[Shape, Feeds]], Feeds] | None] = {}


def deploy_inputs(
    layers: Sequence[LayerParameter], net_path: str | os.PathLike[str] | None
) -> dict[str, tuple[Shape, str]]:
    """For each data layer's first top: the input shape of a deploy net beside ``net_path`` whose
    input feeds the same layers (same names and types) and whose every layer is one of this net's
    (CIFAR-10 quick's shapes never come from cifar10_full.prototxt, whose conv1 is fed the same
    way), and that net's file name."""
    return _deploy_inputs(_wanted(layers), net_path, _body(layers))


def _body(layers: Sequence[LayerParameter]) -> Feeds:
    """The (name, type) of the layers that compute: not the data, losses, accuracy or the Softmax
    a deploy net has in place of the loss."""
    skipped = ("Softmax", "Accuracy", "Silence")
    return frozenset(
        (l.name, l.type) for l in layers if l.bottom and l.type not in skipped and not l.type.endswith("Loss")
    )


def _wanted(layers: Sequence[LayerParameter]) -> dict[str, frozenset[tuple[str, str]]]:
    """Each data layer's first top and the layers it feeds."""
    wanted = {
        layer.top[0]: _consumers(layers, layer.top[0])
        for layer in layers
        if reads_source(layer) and layer.top
    }
    return {blob: feeds for blob, feeds in wanted.items() if feeds}


def _deploy_inputs(
    wanted: Mapping[str, Feeds], net_path: str | os.PathLike[str] | None, body: Feeds | None = None
) -> dict[str, tuple[Shape, str]]:
    if not net_path or not wanted:
        return {}
    found: dict[str, tuple[Shape, str]] = {}
    for candidate in _candidates(Path(net_path)):
        read = _inputs_of(candidate)
        if read is None or (body is not None and not read[1] <= body):
            continue  # not a deploy net, or one with layers this net lacks: another net
        for blob, feeds in wanted.items():
            if blob in found:
                continue
            for shape, its_feeds in read[0].values():
                if its_feeds == feeds:
                    found[blob] = (shape, candidate.name)
                    break
        if len(found) == len(wanted):
            break
    return found


def _consumers(layers: Sequence[LayerParameter], blob: str) -> frozenset[tuple[str, str]]:
    """The (name, type) of the layers that read ``blob`` first (before anything rewrites it)."""
    return frozenset((l.name, l.type) for l in layers if blob in l.bottom and blob not in l.top)


def _candidates(net_path: Path) -> list[Path]:
    folder = net_path.parent
    try:
        names = sorted(p for p in os.listdir(folder) if p.endswith(".prototxt"))
    except OSError:
        return []
    own = net_path.name
    first = [n for n in names if n == "deploy.prototxt"]
    deployish = [n for n in names if "deploy" in n.lower() and n not in first]
    rest = [n for n in names if n not in first and n not in deployish and "solver" not in n.lower()]
    return [folder / n for n in (first + deployish + rest) if n != own][:_MAX_NEIGHBOURS]


def _inputs_of(path: Path) -> tuple[dict[str, tuple[Shape, Feeds]], Feeds] | None:
    """A deploy net's Input layers' shaped tops with the layers each feeds, and its body; cached by
    file stamp."""
    try:
        st = path.stat()
    except OSError:
        return None
    key = (os.fspath(path), st.st_mtime_ns, st.st_size)
    if key in _NEIGHBOURS:
        return _NEIGHBOURS[key]
    result = _read_inputs(path) if st.st_size <= _MAX_BYTES else None
    _NEIGHBOURS[key] = result
    return result


def _read_inputs(path: Path) -> tuple[dict[str, tuple[Shape, Feeds]], Feeds] | None:
    from proto.errors import FormatError
    from proto.textio import parse_net
    from proto.upgrade import upgrade_net

    try:
        net = upgrade_net(parse_net(path.read_bytes(), path, upgrade=False), os.fspath(path), copy=False).net
    except (OSError, FormatError, ValueError):
        return None
    if any(reads_source(layer) for layer in net.layer):
        return None  # another train net, not a deploy one
    inputs: dict[str, tuple[Shape, Feeds]] = {}
    for layer in net.layer:
        if layer.type != "Input" or layer.bottom:
            continue
        shapes = layer.input_param.shape
        for i, top in enumerate(layer.top):
            if len(shapes) in (1, len(layer.top)):
                dims = tuple(int(d) for d in shapes[0 if len(shapes) == 1 else i].dim)
                if len(dims) >= 2 and all(d > 0 for d in dims):
                    inputs[top] = (dims, _consumers(net.layer, top))
    return inputs, _body(net.layer)
