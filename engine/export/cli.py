"""`main.py export NET.prototxt OUT.onnx|OUT.py [--weights W] [--phase P] [--dynamic-batch]` and
`main.py export --solver S.prototxt OUT_DIR [--force]` (--force replaces an earlier package there):
what the output is asked for picks the exporter."""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Callable
from typing import Any

from engine.cli.common import CliError, phase_value, require_file
from engine.export import EXTRA_MODULES, missing_extra

# (module, function, what it writes): the exporters, imported only when asked for.
EXPORTERS = {
    ".onnx": ("engine.export.onnx_export", "export_onnx", "an ONNX model"),
    ".py": ("engine.export.torch_module", "export_module", "a PyTorch module"),
    "package": ("engine.export.package", "export_package", "a torchrun training package"),
}


def _exporter(kind: str) -> Callable[..., Any]:
    module, function, what = EXPORTERS[kind]
    try:
        return getattr(importlib.import_module(module), function)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise CliError(f"export to {what} is not available yet in this version") from exc
        if exc.name and exc.name.split(".")[0] in EXTRA_MODULES:
            raise missing_extra(exc.name.split(".")[0]) from exc
        raise


def run(args: argparse.Namespace) -> int:
    """The exporters take paths and keywords: ``weights`` (a path or None), ``phase`` (caffe_pb2.Phase's
    value, TEST by default) and, for ONNX, ``dynamic_batch``; each returns a one-line summary."""
    weights = args.weights or None
    if weights:
        require_file(weights, "--weights")
    if args.solver:
        if len(args.paths) != 1:
            raise CliError("export --solver S.prototxt OUT_DIR: give exactly one output folder")
        require_file(args.solver, "--solver")
        out_dir = args.paths[0]
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise CliError(f"{out_dir}: exists and is not a folder")
        _exporter("package")(args.solver, out_dir, force=bool(getattr(args, "force", False)))
        print(f"wrote a training package to {out_dir}")
        return 0
    if len(args.paths) != 2:
        raise CliError("export NET.prototxt OUT.onnx|OUT.py (or export --solver S.prototxt OUT_DIR)")
    net, out = args.paths
    require_file(net, "net")
    kind = os.path.splitext(out)[1].lower()
    if kind not in (".onnx", ".py"):
        raise CliError(f"{out}: the output must end in .onnx (ONNX) or .py (a PyTorch module)")
    phase = phase_value(args.phase)
    if kind == ".onnx":
        summary = _exporter(kind)(net, out, weights=weights, phase=phase, dynamic_batch=args.dynamic_batch)
    else:
        if args.dynamic_batch:
            raise CliError("--dynamic-batch applies to .onnx outputs only")
        summary = _exporter(kind)(net, out, weights=weights, phase=phase)
    print(summary if isinstance(summary, str) else f"wrote {out}")
    return 0
