"""Taking a net elsewhere: ONNX (``onnx*.py``), a PyTorch module (``torch_module``) and a training
package for ``torchrun`` (``package``), each computing what the engine computes.

Their libraries (onnx, onnxruntime, torch) are the optional ``export`` extra: nothing here imports
them at module level, and :func:`needs` turns their absence into one line saying how to install them.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from engine.errors import EngineError

INSTALL_HINT = "pip install -e '.[export]'"
EXTRA_MODULES = ("onnx", "onnxruntime", "torch")


class ExportError(EngineError):
    """A net that cannot be exported as asked: the message names the layer and its type, or the file."""


def missing_extra(module: str) -> ExportError:
    return ExportError(f"export needs {module}, which is not installed: {INSTALL_HINT}")


def needs(module: str) -> ModuleType:
    """Import one of the export extra's libraries, or refuse in one line that says how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra(module.split(".")[0]) from exc
