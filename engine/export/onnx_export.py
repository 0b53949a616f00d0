"""The ONNX exporter's entry (the layer mappings are being written)."""

from __future__ import annotations

from engine.export import ExportError, needs


def export_onnx(net_path: str, out_path: str, **options: object) -> str:
    needs("onnx")
    raise ExportError("export to ONNX is not available yet in this version")
