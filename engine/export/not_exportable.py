"""The layer types an export refuses, each with the reason it gives the user. Qt-free.

Every registered type either has a mapping (ONNX: ``onnx_context.MAPPINGS``; PyTorch:
``torch_args.ARGS`` with its class in ``torch_lib``, or a data/Silence layer the module skips) or is
named here; tests/app/test_type_facts.py holds every registered type to that.
"""

from __future__ import annotations

_RECURRENT = "Caffe's recurrent layers reset their state on cont flags, which no mapping is written for"
_SIDE_EFFECT = "it writes HDF5 files while it runs, which an exported net cannot do"
_PYTHON = "it runs your Python code, which an exported net cannot carry"
_DATA_DEPENDENT = "how many items it outputs depends on the selector's values; no mapping is written for that"
_NOT_WRITTEN = "no mapping is written for it yet"

ONNX = {
    "LSTM": _RECURRENT,
    "RNN": _RECURRENT,
    "LSTMUnit": _RECURRENT,
    "HDF5Output": _SIDE_EFFECT,
    "Python": _PYTHON,
    "Filter": _DATA_DEPENDENT,
    "BatchReindex": _NOT_WRITTEN,
    "Im2col": _NOT_WRITTEN,
}

TORCH = {**ONNX, "Parameter": _NOT_WRITTEN}


def because(table: dict[str, str], layer_type: str) -> str:
    """`` (because ...)`` for a declared refusal, else nothing (a type nobody registered)."""
    why = table.get(layer_type)
    return f" ({why})" if why else ""
