"""Every registered layer type declares its per-type facts (issue 27, point 2)."""

from __future__ import annotations

import pytest

from app.type_facts import incomplete_types, missing_facts
from engine.layers import find_layer_class, registry
from engine.layers.registry import layer_types


def test_every_registered_type_has_every_fact() -> None:
    assert len(layer_types()) > 50  # the registry was really read
    assert incomplete_types() == {}


def test_a_copied_and_renamed_type_is_reported_with_what_it_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    # What a contributor does first: copy relu.py, rename the class and its registered type.
    relu = find_layer_class("ReLU")
    assert relu is not None
    monkeypatch.setattr(registry, "_LAYERS", dict(registry._LAYERS))
    registry.register_layer("LeakyThing")(type("LeakyThing", (relu,), {}))
    report = incomplete_types()
    assert list(report) == ["LeakyThing"]
    missing = report["LeakyThing"]
    for fact in ("description", "name stem", "FLOPs rule", "ONNX mapping", "PyTorch mapping"):
        assert any(line.startswith(fact) for line in missing), (fact, missing)
    assert len(missing) == 5


def test_a_type_both_mapped_and_refused_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.export import not_exportable

    monkeypatch.setitem(not_exportable.ONNX, "ReLU", "made up")
    assert missing_facts("ReLU") == [
        "ONNX mapping or refusal (engine/export/onnx_*.py @maps, or not_exportable.ONNX) -- it has both"
    ]


def test_a_mapped_type_without_its_torch_class_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.export import not_exportable, torch_args

    monkeypatch.setitem(torch_args.ARGS, "Filter", lambda layer: {})
    monkeypatch.delitem(not_exportable.TORCH, "Filter")
    assert missing_facts("Filter") == ["PyTorch class (engine/export/torch_lib/: class Filter)"]
