"""Writing the PyTorch exports' files: a state dict through the one atomic writer, and the names an
exported module may take.

``torch.save`` is given a file object on proto.atomic's temporary file (never the target's name, so a
link planted there or at a fixed ``NAME.pt.tmp`` is never written through; two exports at once each
get their own). torch reports a failed write (a full disk) as a RuntimeError about stream positions;
the OSError under it is kept and becomes the one-line ``WriteError``.
"""

from __future__ import annotations

import errno
import io
import keyword
import os
import sys
from typing import Any

from proto.atomic import WriteError, atomic_file

# What the generated module imports (torch_codegen.IMPORTS) and what the package's files import:
# a module of these names beside them would be imported in their place.
IMPORTED = {"torch", "numpy", "math", "os", "typing", "google", "lmdb", "h5py", "PIL", "caffe_pb2", "onnx"}
PACKAGE_MARKER = ".barista-package"  # marks a folder export --solver wrote, which --force may replace


class _Recording(io.RawIOBase):
    """A binary file that remembers the first OSError its writes met (torch hides it)."""

    def __init__(self, sink: io.BufferedWriter) -> None:
        super().__init__()
        self.sink = sink
        self.error: OSError | None = None

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        try:
            return self.sink.write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise

    def flush(self) -> None:
        self.sink.flush()


def save_state(state: dict[str, Any], path: str) -> None:
    """``torch.save(state)`` to ``path``, atomically; a WriteError in one line when it cannot be written."""
    import torch

    with atomic_file(path) as tmp, open(tmp, "wb") as raw:
        sink = _Recording(raw)
        try:
            torch.save(state, sink)  # type: ignore[arg-type]  # a binary file, as torch.save takes
        except RuntimeError as exc:  # "[enforce fail at inline_container.cc] ... unexpected pos"
            cause = sink.error
            if cause is not None:
                raise WriteError(path, cause.strerror or str(cause), cause.errno or 0) from exc
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise WriteError(path, f"torch could not write it ({first})", errno.EIO) from exc


def shadowing(module: str) -> str | None:
    """Why a module named ``module`` must not be written (it would be imported in place of a library
    the exported code or the user's program imports), or None."""
    if keyword.iskeyword(module):
        return f"'{module}' is a Python keyword"
    if module in IMPORTED or module in sys.stdlib_module_names:
        return f"a module named '{module}' would shadow the library of that name (choose another name)"
    if module in sys.builtin_module_names:
        return f"'{module}' is a module built into Python (choose another name)"
    return None


def module_name_problem(out_path: str) -> str | None:
    """None when ``out_path``'s stem makes a module that can be imported and shadows nothing."""
    stem = os.path.splitext(os.path.basename(out_path))[0]
    if not stem.isidentifier():
        return f"the module's name '{stem}' is not a Python identifier"
    return shadowing(stem)
