"""Python: a layer whose work is done by a user's class, as pycaffe's Python layer.

``python_param { module: "m" layer: "C" param_str: "..." }`` imports module ``m`` (found on
``sys.path``, then in the net's folder; ``engine.pyimport`` decides whether it may be, and refuses
names that clash with ours or Python's) and makes ``C(layer_param)``, a subclass of pycaffe's
``Layer`` (``engine.Layer``). Before the object's ``setup`` runs it gets ``self.param_str`` and
``self.phase``; then every
``setup(bottom, top)``, ``reshape(bottom, top)``, ``forward(bottom, top)`` and
``backward(top, propagate_down, bottom)`` is handed to it, with the blobs as pycaffe Blobs whose
``.data`` / ``.diff`` are numpy arrays. The tops take the shapes the object's reshape gives them.
Its learnable blobs (``self.blobs.add_blob(*shape)``) are this layer's ``blobs``: the net
collects them after setup, so the solver updates them like any other parameter.

On the CPU backend the arrays the object sees are the blobs' own. On the GPU they are host copies:
those of the parameters are refreshed from the device before each call and copied back after it;
those of the bottoms and tops are made afresh for each call, on first touch, and copied back after
it (a reference kept from an earlier call is then stale).

``share_in_parallel`` has no effect here: one process runs one solver. An exception raised by the
user's code keeps its type (``except RuntimeError`` still catches it) and gains a message naming
the layer; a module or class that cannot be found is an ImportError / AttributeError likewise.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from engine import pyimport
from engine.blob import Blob
from engine.errors import EngineError, LayerSetupError
from engine.layers.base import Layer
from engine.layers.registry import register_layer
from engine.pycaffe import process
from engine.pycaffe.blob import Blob as PyBlob
from engine.pycaffe.host_copies import HostCopies
from engine.pycaffe.layer import Layer as PyLayer
from proto import caffe_pb2

_combined: dict[type[BaseException], type[Exception]] = {}


def user_error(exc: Exception, message: str) -> Exception:
    """An error of ``exc``'s own type that is also a LayerSetupError carrying ``message``.

    Falls back to a plain LayerSetupError for exception types that cannot be combined or made
    from one message (the caller chains ``exc``, so its traceback is never lost).
    """
    kind = type(exc)
    combined = _combined.get(kind)
    if combined is None:
        try:
            combined = type(
                kind.__name__,
                (LayerSetupError, kind),
                {
                    "__module__": kind.__module__,
                    "__qualname__": kind.__qualname__,
                    "__str__": Exception.__str__,  # KeyError's would quote the message
                },
            )
        except TypeError:
            return LayerSetupError(message)
        _combined[kind] = combined
    try:
        return combined(message)
    except Exception:
        return LayerSetupError(message)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@register_layer("Python")
class PythonLayer(Layer):
    family = "python"
    params = ("python_param",)

    @classmethod
    def learnable_blobs(cls, param: Any) -> None:
        return None  # the user's setup adds them

    def __init__(self, param: caffe_pb2.LayerParameter, xp: ModuleType = np, dtype: Any = np.float32) -> None:
        super().__init__(param, xp, dtype)
        self.param_copies = HostCopies()  # host copies of self.blobs (GPU only)
        self.impl: PyLayer = self._instantiate()

    # --- making the user's object ------------------------------------------------------------
    def _where(self) -> str:
        spec = self.param.python_param
        return f"{spec.module}.{spec.layer}"

    def _fail(self, exc: Exception, text: str) -> Exception:
        return user_error(exc, f"layer '{self.name}' (Python): {text}")

    def _instantiate(self) -> PyLayer:
        spec = self.param.python_param
        if not spec.module:
            raise self._fail(ImportError(), "python_param.module is empty: name the module to import")
        try:
            module = pyimport.import_module(spec.module)
        except (pyimport.NotTrusted, pyimport.ModuleClash) as exc:
            raise self._fail(exc, str(exc)) from exc
        except Exception as exc:
            text = f"cannot import module '{spec.module}' (python_param.module): {_describe(exc)}"
            raise self._fail(exc, text) from exc
        cls = getattr(module, spec.layer, None) if spec.layer else None
        if cls is None:
            origin = getattr(module, "__file__", None) or "built-in"
            text = f"module '{spec.module}' ({origin}) has no class '{spec.layer}' (python_param.layer)"
            raise self._fail(AttributeError(), text)
        if not (isinstance(cls, type) and issubclass(cls, PyLayer)):
            raise self._fail(TypeError(), f"'{self._where()}' is not a class derived from caffe.Layer")
        impl = cls.__new__(cls)
        impl.bind(self, self.param_copies)
        impl.param_str = spec.param_str
        impl.phase = int(self.phase)
        self._run("__init__", cls.__init__, impl, self.param)
        return impl

    # --- the protocol, handed to the object ----------------------------------------------------
    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        if self.phase == caffe_pb2.TRAIN and process.solver_count() > 1 and not process.multiprocess():
            raise self.error("PythonLayer does not support CLI Multi-GPU, use train.py")
        self.impl.param_str = self.param.python_param.param_str
        self.impl.phase = int(self.phase)
        self._call("setup", bottom, top)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        self._call("reshape", bottom, top)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self._call("forward", bottom, top)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        self._call("backward", top, bottom, list(propagate_down))

    def to(self, xp: ModuleType) -> None:
        super().to(xp)
        self.param_copies.clear()

    # --- calling into user code ----------------------------------------------------------------
    def _call(
        self, method: str, first: list[Blob], second: list[Blob], flags: list[bool] | None = None
    ) -> None:
        """Hand ``method`` the blobs as pycaffe Blobs; host copies are synced around the call."""
        call_copies = HostCopies()  # the bottoms' and tops' host copies live for this call only
        one = [PyBlob(b, call_copies) for b in first]
        two = [PyBlob(b, call_copies) for b in second]
        self.param_copies.pull()
        try:
            if flags is None:
                self._run(method, getattr(self.impl, method), one, two)
            else:
                self._run(method, getattr(self.impl, method), one, flags, two)
        finally:
            call_copies.push()
            self.param_copies.push()

    def _run(self, what: str, function: Any, *args: Any) -> None:
        try:
            function(*args)
        except EngineError:
            raise
        except Exception as exc:
            raise self._fail(exc, f"{what}() of {self._where()} raised {_describe(exc)}") from exc
