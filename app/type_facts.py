"""Which per-type facts a registered layer type lacks: the one check that a new type is complete.

A layer type works with its engine file alone; to look and export like the others it also needs a
description (app/layer_families.py), a name stem (app/layer_defaults.py), a FLOPs rule
(graph_view/flops.py), an ONNX mapping (engine/export/onnx_*.py) and a PyTorch mapping
(engine/export/torch_args.py and its class in torch_lib/), or, for either export, a line in
engine/export/not_exportable.py saying why not. tests/app/test_type_facts.py runs this over every
registered type.
"""

from __future__ import annotations

import importlib

from app.layer_defaults import STEMS
from app.layer_families import DESCRIPTIONS
from engine.export import not_exportable, onnx_layers  # noqa: F401  (registers every ONNX mapping)
from engine.export.onnx_context import MAPPINGS
from engine.export.torch_args import ARGS, DROPPED, INPUT_TYPES
from engine.layers.registry import layer_types
from graph_view import flops


def _torch_class(layer_type: str) -> bool:
    from engine.export.torch_codegen import LIBRARY_MODULES

    modules = [importlib.import_module(f"engine.export.torch_lib.{m}") for m in LIBRARY_MODULES]
    return any(hasattr(m, layer_type) for m in modules[1:])


def missing_facts(layer_type: str) -> list[str]:
    """The facts ``layer_type`` lacks, in words that say where each goes (empty when complete)."""
    missing = []
    if layer_type not in DESCRIPTIONS:
        missing.append("description (app/layer_families.py DESCRIPTIONS)")
    if layer_type not in STEMS:
        missing.append("name stem (app/layer_defaults.py STEMS)")
    if not flops.has_rule(layer_type):
        missing.append("FLOPs rule (graph_view/flops.py: a formula, _PER_ELEMENT or FREE)")
    onnx = layer_type in MAPPINGS
    if onnx == (layer_type in not_exportable.ONNX):
        missing.append(
            "ONNX mapping or refusal (engine/export/onnx_*.py @maps, or not_exportable.ONNX)"
            + (" -- it has both" if onnx else "")
        )
    torch = layer_type in ARGS or layer_type in INPUT_TYPES or layer_type in DROPPED
    if torch == (layer_type in not_exportable.TORCH):
        missing.append(
            "PyTorch mapping or refusal (engine/export/torch_args.py ARGS, or not_exportable.TORCH)"
            + (" -- it has both" if torch else "")
        )
    elif layer_type in ARGS and not _torch_class(layer_type):
        missing.append(f"PyTorch class (engine/export/torch_lib/: class {layer_type})")
    return missing


def incomplete_types() -> dict[str, list[str]]:
    """Every registered type that lacks a fact, with what it lacks."""
    found = {t: missing_facts(t) for t in layer_types()}
    return {t: missing for t, missing in found.items() if missing}
