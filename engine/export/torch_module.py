"""`main.py export NET.prototxt OUT.py [--weights W]`: a self-contained PyTorch module file and its weights.

OUT.py holds the layer classes the net uses and the net's nn.Module (see torch_codegen); OUT.pt beside
it holds the weights as a state dict: the ``--weights`` caffemodel's, or the fillers' (seeded) values.
The net is built by the engine first (Caffe's phase filter and shape inference), so a net the
engine refuses is refused here with the engine's message.
"""

from __future__ import annotations

import contextlib
import keyword
import os
import re
from typing import Any

import numpy as np

from engine import backend, rng
from engine.export import ExportError, needs
from engine.export.torch_codegen import ExportedNet, describe, module_source
from engine.export.torch_files import module_name_problem, save_state
from engine.net import Net
from proto import caffe_pb2
from proto.atomic import check_target, write_text_atomic

__all__ = ["ExportError", "build", "export_module", "state_dict"]


def class_name(net_name: str) -> str:
    """A class name from the net's name: LeNet stays LeNet, "my-net" becomes MyNet; "Net" if none."""
    words = [w for w in re.split(r"\W+", net_name) if w]
    name = "".join(w[:1].upper() + w[1:] for w in words) or "Net"
    name = "Net" + name if name[0].isdigit() else name
    if not name.isidentifier():  # \w holds characters no identifier may (a superscript two)
        return "Net"
    # "None", or a name the module already holds (ReLU, F, Any): the net's class would replace it
    return name + "Net" if keyword.iskeyword(name) or name in _taken() else name


def _taken() -> set[str]:
    import importlib

    from engine.export.torch_codegen import LIBRARY_MODULES

    names = {"F", "nn", "torch", "math", "os", "Any", "annotations", "load"}
    for module in LIBRARY_MODULES:
        names |= set(vars(importlib.import_module(f"engine.export.torch_lib.{module}")))
    return names


def build(
    param: caffe_pb2.NetParameter,
    phase: int,
    weights: str | None = None,
    seed: int = 0,
    dtype: Any = np.float32,
) -> Net:
    """The engine's net for ``phase`` (fillers seeded, then ``weights`` copied in) and the phase-filtered
    layers as written (no splits)."""

    with rng.seeded(seed):
        net = Net(param, phase=phase, xp=np, dtype=dtype)
    if weights:
        net.copy_trained_layers_from(weights)
    return net


def state_dict(net: Net, exported: ExportedNet) -> dict[str, Any]:
    """The module's state dict (torch tensors) holding the engine net's blob values."""
    import torch

    by_name = {layer.caffe_name: layer for layer in exported.layers}
    state: dict[str, Any] = {}
    for name, layer in zip(net.layer_names, net.layers):
        ex = by_name.get(name)
        if ex is None:
            continue
        for blob_name, blob in zip(ex.blob_names, layer.blobs):
            state[f"{ex.attr}.{blob_name}"] = torch.from_numpy(np.array(backend.to_host(blob.data)))
    return state


def export_module(
    net_path: str,
    out_path: str,
    weights: str | None = None,
    phase: int = caffe_pb2.TEST,
    param: caffe_pb2.NetParameter | None = None,
    seed: int = 0,
) -> str:
    """Write OUT.py and OUT.pt (the fillers drawn under ``seed`` when no weights are given); returns a
    one-line summary. ExportError (or the engine's error) on a net that cannot be exported."""
    needs("torch")
    from proto import textio

    if param is None:
        param = textio.read_net(net_path)
    net = build(param, phase, weights, seed)
    exported = describe(net, class_name(param.name))
    stem = os.path.splitext(os.path.basename(out_path))[0]
    problem = module_name_problem(out_path)
    if problem:
        raise ExportError(f"{out_path}: {problem}")
    check_target(out_path)  # a link, a folder or a missing folder refused before the weights are written
    weights_path = os.path.splitext(out_path)[0] + ".pt"
    title = f"{param.name or 'The net'} as a PyTorch module."
    text = module_source(exported, os.path.basename(net_path), stem, os.path.basename(weights_path), title)
    compile(text, out_path, "exec")  # a generator bug must not leave a broken file behind
    state = state_dict(net, exported)
    new_weights = not os.path.lexists(weights_path)
    save_state(state, weights_path)
    try:
        write_text_atomic(out_path, text)
    except OSError:
        if new_weights:  # a module that could not be written leaves no weights of its own behind
            with contextlib.suppress(OSError):
                os.unlink(weights_path)
        raise
    count = sum(int(t.numel()) for t in state.values())
    return f"wrote {out_path} ({len(exported.layers)} layers) and {weights_path} ({count} values)"
