"""The text of an exported PyTorch module: the layer classes a net uses, and one nn.Module for the net.

The net class has one attribute per Caffe layer (named after it where Python allows) and a forward
that calls them in Caffe's order, one line per layer, each blob a local variable (an in-place
layer rebinds its blob's name, as Caffe's in-place tops do; a blob read by several layers is one
tensor, whose gradients autograd sums as Caffe's Split layers do). Learned blobs shared by
``param { name }`` are one Parameter; lr_mult 0 means requires_grad False; propagate_down false
detaches that bottom.
"""

from __future__ import annotations

import inspect
import keyword
import re
from dataclasses import dataclass, field
from typing import Any

from engine.export import ExportError, torch_args
from engine.export.torch_args import INPUT_TYPES
from engine.net import Net
from proto import caffe_pb2

LIBRARY_MODULES = ("common", "neuron", "vision", "shape", "loss")
RESERVED = {"self", "torch", "nn", "F", "math", "outputs", "Any", "os"}


@dataclass
class ExportedLayer:
    """One Caffe layer as the module holds it."""

    caffe_name: str
    type: str
    attr: str
    blob_names: tuple[str, ...]
    args: dict[str, Any]
    bottoms: list[str]
    tops: list[str]
    detach: list[bool] = field(default_factory=list)


@dataclass
class ExportedNet:
    class_name: str
    phase: int
    layers: list[ExportedLayer]
    inputs: list[str]  # required keyword arguments (Caffe blob names)
    optional_inputs: list[str]  # DummyData tops, drawn when not given
    outputs: list[str]
    loss_weights: dict[str, float]
    learnable: list[tuple[str, float, float]]  # "attr.blob", lr_mult, decay_mult in Caffe's order
    shared: list[tuple[str, str, str]]  # ("attr.blob" of the sharer, "attr.blob" of the owner, param name)
    frozen: list[str]  # "attr.blob" with lr_mult 0


def identifier(name: str, taken: set[str], reserved: set[str]) -> str:
    """A Python identifier close to ``name``, not in ``taken`` nor ``reserved``."""
    base = re.sub(r"\W", "_", name) or "blob"
    if base[0].isdigit():
        base = "_" + base
    if keyword.iskeyword(base) or base in reserved:
        base += "_"
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}_{k}"
    taken.add(out)
    return out


def inserted_split(net: Net, layer_id: int) -> bool:
    """Whether layer ``layer_id`` is a Split that InsertSplits added (named BLOB_PRODUCER_INDEX_split)."""
    layer = net.layers[layer_id]
    if layer.type != "Split" or len(layer.param.bottom) != 1:
        return False
    match = re.fullmatch(re.escape(layer.param.bottom[0]) + r"_(.+)_(\d+)_split", layer.name)
    return match is not None and (match.group(1) in net.layer_names[:layer_id] or match.group(1) == "input")


def describe(net: Net, class_name: str) -> ExportedNet:
    """The exported form of ``net`` (as the engine built it, splits included): ExportError if a layer
    cannot be exported."""
    from torch import nn  # the reserved attribute names of a module

    module_names = set(dir(nn.Module)) | RESERVED
    layers: list[ExportedLayer] = []
    attrs: set[str] = set()
    by_engine_id: dict[int, ExportedLayer] = {}
    inputs: list[str] = []
    optional: list[str] = []
    loss_weights: dict[str, float] = {}
    alias: dict[str, str] = {}  # a split's top -> the blob it copies
    for layer_id, layer in enumerate(net.layers):
        param = layer.param
        bottoms = [alias.get(b, b) for b in param.bottom]
        if inserted_split(net, layer_id):  # a blob read twice is one tensor here
            for top in param.top:
                alias[top] = bottoms[0]
            continue
        tops = list(param.top)
        if layer.type in INPUT_TYPES:
            inputs += [t for t in tops if t not in inputs]
            continue
        if layer.type in torch_args.DROPPED:
            continue
        args = torch_args.layer_args(layer)
        if layer.type == "DummyData":
            args["shapes"] = [tuple(b.shape) for b in net.top_vecs[layer_id]]
            optional += tops
        names = tuple(args.get("blobs", {}))
        attr = identifier(layer.name, attrs, module_names)
        detach = [bool(param.propagate_down) and not param.propagate_down[j] for j in range(len(bottoms))]
        exported = ExportedLayer(layer.name, layer.type, attr, names, args, bottoms, tops, detach)
        layers.append(exported)
        by_engine_id[layer_id] = exported
        for top_id, blob_id in enumerate(net.top_id_vecs[layer_id]):
            weight = layer.loss(top_id)
            if weight:
                loss_weights[net.blob_names[blob_id]] = weight
    learnable, shared, frozen = [], [], []
    for param_id, (layer_id, blob_id) in enumerate(net.param_layer_indices):
        found = by_engine_id.get(layer_id)
        if found is None or blob_id >= len(found.blob_names):
            raise ExportError(f"layer '{net.layer_names[layer_id]}': its blob {blob_id} has no exported form")
        path = f"{found.attr}.{found.blob_names[blob_id]}"
        owner = net.param_owners[param_id]
        if owner >= 0:
            owner_layer, owner_blob = net.param_layer_indices[owner]
            o = by_engine_id[owner_layer]
            shared.append((path, f"{o.attr}.{o.blob_names[owner_blob]}", net.param_display_names[param_id]))
            continue
        learnable_id = net.learnable_param_ids[param_id]
        lr, decay = net.params_lr[learnable_id], net.params_weight_decay[learnable_id]
        learnable.append((path, float(lr), float(decay)))
        if lr == 0 and found.type != "BatchNorm":
            frozen.append(path)
    outputs = [alias.get(name, name) for name in net.output_blob_names]
    outputs += [name for name in loss_weights if name not in outputs]
    return ExportedNet(
        class_name, net.phase, layers, inputs, optional, outputs, loss_weights, learnable, shared, frozen
    )


def library_source(types: set[str]) -> str:
    """The source of the exported classes for ``types`` and the helpers they use, in file order."""
    import importlib

    modules = [importlib.import_module(f"engine.export.torch_lib.{m}") for m in LIBRARY_MODULES]
    common = modules[0]
    types = set(types)
    for m in modules[1:]:  # a layer built of other layers (SPP of Pooling) names them in its helpers
        for t in list(types):
            types |= {h for h in getattr(getattr(m, t, None), "helpers", ()) if not hasattr(common, h)}
    wanted = [getattr(m, t) for m in modules[1:] for t in sorted(types) if hasattr(m, t)]
    helpers: set[str] = set()
    for cls in wanted:
        helpers |= set(getattr(cls, "helpers", ()))
    parts = []
    constants = [name for name in ("FLT_MAX", "FLT_MIN", "LOG_THRESHOLD") if name in helpers]
    if constants:
        text = inspect.getsource(common)
        for constant in constants:
            parts.append(next(line for line in text.splitlines() if line.startswith(f"{constant} =")))
    for name in ("add_blobs", "caffe_axis", "count", "caffe_gradient", "normalizer"):
        if name in helpers:
            parts.append(inspect.getsource(getattr(common, name)).rstrip())
    for cls in wanted:
        parts.append(_without_helpers(inspect.getsource(cls)).rstrip())
    return "\n\n\n".join(parts)


def _without_helpers(text: str) -> str:
    """A class's source less its ``helpers = (...)`` line (the exporter's bookkeeping)."""
    return re.sub(r"\n    helpers = \([^)]*\)\n", "\n", text)


def _literal(value: Any) -> str:
    if isinstance(value, float):
        return repr(float(f"{value:.9g}"))  # the float32 value, written shortest
    if isinstance(value, tuple):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def net_source(exported: ExportedNet) -> str:
    """The net's class: __init__ building the layers, forward calling them."""
    variables: dict[str, str] = {}
    taken: set[str] = set()

    def var(blob: str) -> str:
        if blob not in variables:
            variables[blob] = identifier(blob, taken, RESERVED)
        return variables[blob]

    phase = caffe_pb2.Phase.Name(exported.phase)
    lines = [
        f"class {exported.class_name}(nn.Module):",
        f'    """The net as Caffe builds it for phase {phase}: forward(**inputs) -> dict of output blobs."""',
        "",
        f"    inputs = {_literal(tuple(exported.inputs))}",
        f"    optional_inputs = {_literal(tuple(exported.optional_inputs))}  # drawn when not given",
        f"    outputs = {_literal(tuple(exported.outputs))}",
        f"    loss_weights = {_literal(exported.loss_weights)}  # the net's loss: sum of weight * blob",
        "    # Caffe's layer name -> (type, attribute, blob names in Caffe's order), for .caffemodel files",
        "    caffe_layers = {",
    ]
    for layer in exported.layers:
        if layer.blob_names:
            lines.append(
                f"        {layer.caffe_name!r}: "
                f"({layer.type!r}, {layer.attr!r}, {_literal(layer.blob_names)}),"
            )
    lines += [
        "    }",
        "    # Caffe's learnable parameters in its order (its solver history's): lr_mult, decay_mult",
        "    learnable = (",
    ]
    lines += [
        f"        ({path!r}, {_literal(lr)}, {_literal(decay)})," for path, lr, decay in exported.learnable
    ]
    arguments = {name: var(name) for name in [*exported.inputs, *exported.optional_inputs]}
    lines += [
        "    )",
        f"    arguments = {_literal(arguments)}  # blob name -> forward's keyword",
        "",
        "    def __init__(self) -> None:",
        "        super().__init__()",
    ]
    for layer in exported.layers:
        args = ", ".join(f"{k}={_literal(v)}" for k, v in layer.args.items())
        lines.append(f"        self.{layer.attr} = {layer.type}({args})")
    for path, owner, name in exported.shared:
        attr, blob = path.rsplit(".", 1)
        lines.append(f"        self.{attr}.{blob} = self.{owner}  # one parameter, shared as {name!r}")
    for path in exported.frozen:
        lines.append(f"        self.{path}.requires_grad_(False)  # lr_mult: 0")
    required = [f"{var(name)}: torch.Tensor" for name in exported.inputs]
    optional = [f"{var(name)}=None" for name in exported.optional_inputs]
    signature = ", ".join(["self", *(["*"] if required or optional else []), *required, *optional])
    lines += ["", f"    def forward({signature}) -> dict[str, torch.Tensor]:"]
    for layer in exported.layers:
        bottoms = [var(b) + (".detach()" if d else "") for b, d in zip(layer.bottoms, layer.detach)]
        if layer.type == "DummyData":
            bottoms = [var(t) for t in layer.tops]
        call = f"self.{layer.attr}({', '.join(bottoms)})"
        tops = [var(t) for t in layer.tops]
        if not tops:
            lines.append(f"        {call}")
        elif len(tops) == 1 and layer.type not in ("Slice", "Split", "DummyData"):
            lines.append(f"        {tops[0]} = {call}")
        else:
            lines.append(f"        {', '.join(tops)}{',' if len(tops) == 1 else ''} = {call}")
    result = ", ".join(f"{name!r}: {var(name)}" for name in exported.outputs)
    lines.append(f"        return {{{result}}}")
    return "\n".join(lines)


HEADER = '''"""{title}

Exported by Barista from {source} (phase {phase}). The net computes what Caffe computes: every
layer below is written with Caffe's own semantics (pooling's rounding and AVE divisor, LRN, BatchNorm's
scale factor, InnerProduct's axis, the losses' normalisation and gradients).

    import {module}
    net = {module}.load()                 # the weights saved beside this file ({weights})
    out = net({example})
    loss = sum(w * out[name] for name, w in net.loss_weights.items())
    loss.backward()
"""

'''

IMPORTS = """\
from __future__ import annotations

import math
import os
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
"""

LOADER = '''

def load(weights: str | None = None) -> {class_name}:
    """The net with its weights: the state dict file ``weights``, by default {weights} beside this file."""
    net = {class_name}()
    path = weights or os.path.join(os.path.dirname(os.path.abspath(__file__)), {weights!r})
    net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return net
'''


def doc_text(text: str) -> str:
    """``text`` as it may stand inside a \"\"\"docstring\"\"\": backslashes, quotes, line breaks and
    bytes that are not text (a file name's) escaped as a string literal escapes them."""
    return repr(str(text))[1:-1].replace('"', '\\"')


def module_source(exported: ExportedNet, source: str, module: str, weights: str, title: str) -> str:
    types = {layer.type for layer in exported.layers}
    example = ", ".join(f"{n}=..." for n in exported.inputs) or ""
    header = HEADER.format(
        title=doc_text(title),
        source=doc_text(source),
        phase=caffe_pb2.Phase.Name(exported.phase),
        module=module,
        weights=weights,
        example=example,
    )
    body = [
        header.rstrip(),
        "",
        IMPORTS.rstrip(),
        "",
        "",
        library_source(types),
        "",
        "",
        net_source(exported),
    ]
    return "\n".join(body).rstrip() + "\n" + LOADER.format(class_name=exported.class_name, weights=weights)
