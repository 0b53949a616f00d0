"""The work of File > Export, done outside the GUI (the dialog runs it in a worker thread): everything
it needs is read from the document and the form beforehand, so nothing here touches Qt or the
document. Each function returns the line to tell the user; ``attempt`` turns a refusal into one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from app import netio
from proto import caffe_pb2

INSTALL = "pip install -e '.[export]'"


@dataclass(frozen=True)
class NetExport:
    kind: str
    net: caffe_pb2.NetParameter
    net_path: str | None
    out: str
    weights: str | None
    phase: int
    deploy: bool
    dynamic_batch: bool


def attempt(work: Callable[[], str]) -> tuple[str, bool]:
    """(what to tell the user, whether it was written)."""
    try:
        return work(), True
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("engine"):
            return "This export is not available in this version yet.", False
        return f"Export needs {exc.name}, which is not installed: {INSTALL}", False
    except Exception as exc:  # the exporter's one-line refusal (a layer it cannot express, a bad file)
        return f"Not exported: {exc}", False


def write_package(solver, out: str, weights: str | None, force: bool, source: str) -> str:
    from engine.export.package import export_package

    export_package("", out, weights=weights, param=solver, force=force, source=source)
    return f"Wrote the package to {out}. Run it with the command above (rank 0 logs to stderr)."


def write_net(e: NetExport) -> str:
    """The net (or the deploy net derived from it) as ONNX or a PyTorch module, through a prototxt
    named as the user's file, so the module's docstring names that file, never a temporary one."""
    net, phase, lead = e.net, e.phase, ""
    if e.deploy:
        from engine.model_use.deploy import derive

        derived = derive(e.net, e.net_path, out_path=e.out)
        net, phase = derived.net, caffe_pb2.TEST
        shapes = ", ".join(f"{name} {'×'.join(map(str, shape))}" for name, shape in derived.inputs.items())
        lead = f"Deploy net (input {shapes or 'none'}; output {derived.output or 'the last tops'}): "
    name = os.path.basename(e.net_path) if e.net_path else f"{e.net.name or 'net'}.prototxt"
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(netio.net_to_text(net))
        if e.kind == "onnx":
            from engine.export.onnx_export import export_onnx

            summary = export_onnx(path, e.out, weights=e.weights, phase=phase, dynamic_batch=e.dynamic_batch)
        else:
            from engine.export.torch_module import export_module

            summary = export_module(path, e.out, weights=e.weights, phase=phase, param=net)
    return lead + (summary if isinstance(summary, str) else f"wrote {e.out}")
