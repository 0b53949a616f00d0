"""Run a net in the engine and as its exported PyTorch module on the same inputs and weights, forward
and backward, and report the largest relative differences (imported by name from tests/engine)."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine import rng
from engine.export import torch_module
from engine.export.torch_args import INPUT_TYPES
from engine.export.torch_codegen import describe, module_source
from engine.layers import dropout
from proto import caffe_pb2, textio


def load_module(text: str, name: str = "exported") -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(text, f"<{name}>", "exec"), module.__dict__)
    return module


class RecordingRandom:
    """Wraps the engine's generator to keep every uniform draw (so the module can replay dropout)."""

    def __init__(self, inner: Any, draws: list[np.ndarray]) -> None:
        self.inner, self.draws = inner, draws

    def random(self, *args: Any, **kwargs: Any) -> np.ndarray:
        out = self.inner.random(*args, **kwargs)
        self.draws.append(np.array(out))
        return out


def worst(got: np.ndarray, want: np.ndarray) -> float:
    """Largest difference relative to the expected array's magnitude."""
    if want.size == 0:
        return 0.0
    scale = max(float(np.abs(want).max()), 1e-6)
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale


def compare(
    param: caffe_pb2.NetParameter,
    phase: int = caffe_pb2.TRAIN,
    inputs: dict[str, np.ndarray] | None = None,
    seed: int = 3,
    monkeypatch: Any = None,
    dtype: Any = np.float32,
    force_backward: bool = True,
    via: Path | None = None,
) -> dict[str, float]:
    """{what: relative error} for every output, input gradient and parameter gradient. With ``via`` (a
    folder) the module goes the user's way: the prototxt written there, `export_module` writing
    exported_net.py and its .pt, the file imported and its ``load()`` called."""
    param = caffe_pb2.NetParameter.FromString(param.SerializeToString())
    param.force_backward = force_backward
    net = torch_module.build(param, phase, seed=seed, dtype=dtype)
    if phase == caffe_pb2.TEST:  # running statistics a trained net could hold (fresh ones are 0)
        for layer in net.layers:
            if layer.type == "BatchNorm":
                c = layer.blobs[0].count()
                layer.blobs[0].data[...] = np.random.default_rng(seed).normal(0, 0.1, c)
                layer.blobs[1].data[...] = np.random.default_rng(seed).uniform(0.5, 1.5, c)
                layer.blobs[2].data[...] = 1
    exported = describe(net, "Exported")
    if via is None:
        module = load_module(module_source(exported, "test", "test", "test.pt", "test"))
        model = module.Exported()
        if dtype == np.float64:
            model.double()
        model.load_state_dict(torch_module.state_dict(net, exported))
    else:
        model = exported_file(param, phase, seed, via)
    draws: list[np.ndarray] = []
    if monkeypatch is not None:
        original = dropout.rng.for_module
        monkeypatch.setattr(dropout.rng, "for_module", lambda xp: RecordingRandom(original(xp), draws))
    gen = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for name in exported.inputs:
        blob = net.blob_by_name(name)
        if inputs and name in inputs:
            value = inputs[name]
        elif "label" in name or name == "sim":  # class labels (two classes fit every example net)
            value = gen.integers(0, 2, blob.shape).astype(dtype)
        else:
            value = gen.standard_normal(blob.shape).astype(dtype)
        blob.reshape(value.shape)
        blob.data[...] = value
        feeds[name] = value
    net.reshape()
    with rng.seeded(seed):
        net.forward()
    read = [t for layer in net.layers if layer.type in INPUT_TYPES - {"Input"} for t in layer.param.top]
    for name in [*read, *exported.optional_inputs]:  # what data layers read, DummyData drew
        feeds[name] = np.array(net.blob_by_name(name).data)
    cotangents = {}
    for name in exported.outputs:
        blob = net.blob_by_name(name)
        if name not in exported.loss_weights:
            cotangents[name] = gen.standard_normal(blob.shape).astype(dtype)
            blob.diff[...] = cotangents[name]
    want_out = {name: np.array(net.blob_by_name(name).data) for name in exported.outputs}
    net.clear_param_diffs()
    net.backward()
    replay = iter(draws)
    for layer in model.modules():
        if type(layer).__name__ == "Dropout":
            layer.noise = lambda shape: torch.from_numpy(next(replay)).reshape(shape)
    tensors = {
        name: torch.tensor(v, requires_grad=name not in exported.optional_inputs and v.dtype == dtype)
        for name, v in feeds.items()
    }
    out = model(**{module_arg(exported, n): t for n, t in tensors.items()})
    objective = sum(w * out[name] for name, w in exported.loss_weights.items())
    for name, c in cotangents.items():
        objective = objective + (out[name] * torch.from_numpy(c)).sum()
    errors: dict[str, float] = {}
    for name in exported.outputs:
        errors[f"out {name}"] = worst(out[name].detach().numpy(), want_out[name])
    if isinstance(objective, torch.Tensor) and objective.requires_grad:
        objective.backward()
    for name, t in tensors.items():
        if t.requires_grad and net.blob_need_backward[net.blob_names.index(name)]:
            got = t.grad.numpy() if t.grad is not None else np.zeros(t.shape, dtype)
            errors[f"d {name}"] = worst(got, np.array(net.blob_by_name(name).diff))
    params = dict(model.named_parameters(remove_duplicate=False))
    by_name = {layer.caffe_name: layer for layer in exported.layers}
    for layer_name, layer in zip(net.layer_names, net.layers):
        ex = by_name.get(layer_name)
        for blob_name, blob in zip(ex.blob_names if ex else (), layer.blobs):
            p = params[f"{ex.attr}.{blob_name}"]
            if ex.type == "BatchNorm":  # the running statistics, updated by a TRAIN forward
                errors[f"{layer_name}.{blob_name}"] = worst(p.detach().numpy(), np.array(blob.data))
            elif p.requires_grad:
                got = p.grad.numpy() if p.grad is not None else np.zeros(p.shape, dtype)
                errors[f"d {layer_name}.{blob_name}"] = worst(got, np.array(blob.diff))
    return errors


def exported_file(param: caffe_pb2.NetParameter, phase: int, seed: int, folder: Path) -> Any:
    """The net exported by `export_module` into ``folder`` and loaded from there, as a user would."""
    prototxt = folder / "net.prototxt"
    textio.write_net(prototxt, param)
    out = folder / "exported_net.py"
    torch_module.export_module(str(prototxt), str(out), phase=phase, seed=seed)
    spec = importlib.util.spec_from_file_location(f"exported_{abs(hash(str(folder)))}", out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load()


def module_arg(exported: Any, blob: str) -> str:
    """The keyword the module's forward takes for ``blob`` (a Python identifier)."""
    from engine.export.torch_codegen import RESERVED, identifier

    taken: set[str] = set()
    names = {}
    for layer_inputs in (exported.inputs, exported.optional_inputs):
        for name in layer_inputs:
            names[name] = identifier(name, taken, RESERVED)
    return names[blob]
