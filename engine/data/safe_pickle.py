"""Unpickle numpy arrays and nothing else.

A pickle can name any importable callable and have it called; this unpickler admits only the
globals numpy's own arrays are rebuilt from (``_reconstruct``, ``ndarray``, ``dtype``, under their
numpy 1 and numpy 2 module names) and refuses anything else before it is imported. Python 2
pickles (numpy 1.x era) are read with ``encoding="latin1"``, as numpy documents for them.
"""

from __future__ import annotations

import io
import pickle
from typing import IO, Any

import numpy as np

try:
    from numpy._core import multiarray as _multiarray  # numpy 2
except ImportError:  # numpy 1.x
    from numpy.core import multiarray as _multiarray  # type: ignore[no-redef]

_ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _multiarray._reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _multiarray._reconstruct,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}


class RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refusing to load {module}.{name}: only numpy arrays are allowed"
            ) from None

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("refusing a persistent id: only numpy arrays are allowed")


def load_arrays(file: IO[bytes] | io.BufferedIOBase) -> Any:
    """What the pickle in ``file`` holds, built from tuples, lists, numbers and numeric numpy arrays."""
    value = RestrictedUnpickler(file, encoding="latin1").load()
    _check(value)
    return value


def _check(value: Any) -> None:
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject or value.dtype.kind not in "biuf":
            raise pickle.UnpicklingError(
                f"refusing an array of dtype {value.dtype}: only numbers are allowed"
            )
    elif isinstance(value, tuple | list):
        for item in value:
            _check(item)
    elif not isinstance(value, int | float | str | bytes | type(None)):
        raise pickle.UnpicklingError(f"refusing an object of type {type(value).__name__}")
