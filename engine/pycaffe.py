"""pycaffe's Net, Blob and Layer, so scripts written for pycaffe run with ``import engine as caffe``.

The wrappers hold an engine Net and present it as pycaffe does: ``net.blobs`` and ``net.params``
as ordered dicts of blobs whose ``.data`` / ``.diff`` are writable numpy arrays, ``forward`` and
``backward`` taking and returning dicts of arrays, and the underscore methods pycaffe.py builds on.

``Layer`` is the base class of Python layers (``type: "Python"``, engine/layers/python_layer.py):
a script subclasses it, and ``net.layers`` holds the script's objects for those layers and
views (same surface) for the built-in ones.

On the GPU backend the numpy arrays handed out are host mirrors, kept in step as Caffe's
SyncedMemory keeps them: every mirror a script has touched is copied to the device before the
engine runs and refreshed in place afterwards, so a reference kept across calls stays valid.
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from engine import backend, pymodules
from engine import net as core
from engine.blob import Blob as CoreBlob
from engine.errors import EngineError, naming_file
from engine.layers import Layer as CoreLayer
from engine.layers.python_layer import PythonLayer
from proto import caffe_pb2
from proto.inputs import NotARegularFile, open_regular

TRAIN = caffe_pb2.TRAIN
TEST = caffe_pb2.TEST


class _Mirrors:
    """Host copies of device blobs handed to Python code (empty on the CPU backend)."""

    def __init__(self, children: Sequence[_Mirrors] = ()) -> None:
        self._arrays: dict[tuple[int, str], tuple[CoreBlob, np.ndarray]] = {}
        self.children = list(children)  # synced with these (the Python layers' parameter copies)

    def host(self, blob: CoreBlob, field: str) -> np.ndarray:
        device = getattr(blob, field)
        if not backend.is_gpu_array(device):
            return device
        key = (id(blob), field)
        entry = self._arrays.get(key)
        if entry is None or entry[1].shape != device.shape:
            entry = (blob, backend.to_host(device).copy())
            self._arrays[key] = entry
        return entry[1]

    def push(self) -> None:
        """Copy what scripts may have written into the device arrays."""
        for (_, field), (blob, host) in self._arrays.items():
            device = getattr(blob, field)
            if device.shape == host.shape:
                device.set(host) if hasattr(device, "set") else device.__setitem__(Ellipsis, host)
        for child in self.children:
            child.push()

    def pull(self) -> None:
        """Refresh every handed-out host array in place from the device."""
        for (_, field), (blob, host) in list(self._arrays.items()):
            device = getattr(blob, field)
            if device.shape == host.shape:
                host[...] = backend.to_host(device)
            else:
                del self._arrays[(id(blob), field)]
        for child in self.children:
            child.pull()

    def clear(self) -> None:
        """Forget every host copy (the blobs moved to another array module)."""
        self._arrays.clear()


class Blob:
    """pycaffe's Blob: shape, count and the legacy 4-D accessors; data and diff as numpy arrays."""

    def __init__(self, blob: CoreBlob, mirrors: _Mirrors) -> None:
        self._blob = blob
        self._mirrors = mirrors

    @property
    def data(self) -> np.ndarray:
        return self._mirrors.host(self._blob, "data")

    @property
    def diff(self) -> np.ndarray:
        return self._mirrors.host(self._blob, "diff")

    @property
    def shape(self) -> tuple[int, ...]:
        return self._blob.shape

    @property
    def count(self) -> int:
        return self._blob.count()

    num = property(lambda self: self._blob.num)
    channels = property(lambda self: self._blob.channels)
    height = property(lambda self: self._blob.height)
    width = property(lambda self: self._blob.width)

    def reshape(self, *shape: int) -> None:
        self._blob.reshape(tuple(int(s) for s in shape))

    def __repr__(self) -> str:
        return f"<Blob {self.shape}>"


def _core_blobs(blobs: Sequence[Blob]) -> list[CoreBlob]:
    return [b._blob for b in blobs]


class BlobVec(Sequence[Blob]):
    """A layer's learnable blobs, as pycaffe's BlobVec: indexing, len, iteration and add_blob."""

    def __init__(self, owner: CoreLayer, mirrors: _Mirrors) -> None:
        self._owner = owner  # read `blobs` on each access: a layer may replace its list
        self._mirrors = mirrors

    def __len__(self) -> int:
        return len(self._owner.blobs)

    @overload
    def __getitem__(self, index: int) -> Blob: ...

    @overload
    def __getitem__(self, index: slice) -> list[Blob]: ...

    def __getitem__(self, index: int | slice) -> Blob | list[Blob]:
        if isinstance(index, slice):
            return [Blob(b, self._mirrors) for b in self._owner.blobs[index]]
        return Blob(self._owner.blobs[index], self._mirrors)

    def add_blob(self, *shape: int) -> None:
        """Append a zero-filled blob of this shape (ints given one by one, as pycaffe takes them)."""
        self._owner.blobs.append(self._owner.new_blob(tuple(int(s) for s in shape)))

    def __repr__(self) -> str:
        return f"<BlobVec of {len(self)}: {', '.join(str(b.shape) for b in self)}>"


class Layer:
    """pycaffe's Layer, and the base class of Python layers.

    Subclass it and name the subclass in a ``type: "Python"`` layer's ``python_param``::

        class TimesTen(caffe.Layer):
            def setup(self, bottom, top): ...          # read self.param_str; self.blobs.add_blob(...)
            def reshape(self, bottom, top): top[0].reshape(*bottom[0].data.shape)
            def forward(self, bottom, top): top[0].data[...] = 10 * bottom[0].data
            def backward(self, top, propagate_down, bottom): bottom[0].diff[...] = 10 * top[0].diff

    The net makes the object with the LayerParameter; before ``setup`` it sets ``self.param_str``
    (python_param.param_str) and ``self.phase`` (TRAIN or TEST). ``self.blobs`` holds its
    learnable parameters; ``type`` reads "Python".
    """

    _core: CoreLayer
    _blobvec: BlobVec
    phase: int
    param_str: str

    def __init__(self, param: caffe_pb2.LayerParameter | None = None) -> None:
        if "_core" in self.__dict__:  # made by a net's Python layer, already attached to it
            return
        layer_param = caffe_pb2.LayerParameter(type="Python")  # made by hand: storage of its own
        if param is not None:
            layer_param.CopyFrom(param)
        PythonLayer(layer_param, impl=self)
        self.param_str = layer_param.python_param.param_str
        self.phase = int(layer_param.phase)

    def _attach(self, core: CoreLayer, mirrors: _Mirrors) -> None:
        self._core = core
        self._blobvec = BlobVec(core, mirrors)

    @property
    def type(self) -> str:
        return self._core.type

    @property
    def blobs(self) -> BlobVec:
        return self._blobvec

    @property
    def param_propagate_down(self) -> list[bool]:
        """Whether each blob of ``blobs`` wants a gradient (its lr_mult is not 0); set by the net."""
        return list(self._core.param_propagate_down)

    def setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Read ``self.param_str``, check the bottoms, create ``self.blobs``; by default nothing."""

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define reshape(bottom, top) to shape its tops")

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define forward(bottom, top)")

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        """By default no gradient: an error only if one is wanted."""
        if any(propagate_down):
            raise NotImplementedError(
                f"{type(self).__name__} must define backward(top, propagate_down, bottom) to backpropagate"
            )


class _LayerView(Layer):
    """A built-in layer in ``net.layers``: type, phase and blobs; setup/reshape run the engine's."""

    def __init__(self, layer: CoreLayer, mirrors: _Mirrors) -> None:
        self._attach(layer, mirrors)
        self._mirrors = mirrors
        self.phase = int(layer.phase)

    def _run(self, action: Callable[[], None]) -> None:
        self._mirrors.push()
        try:
            action()
        finally:
            self._mirrors.pull()

    def setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self._run(lambda: self._core.layer_setup(_core_blobs(bottom), _core_blobs(top)))

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        self._run(lambda: self._core.reshape(_core_blobs(bottom), _core_blobs(top)))

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        self._run(lambda: self._core.forward(_core_blobs(bottom), _core_blobs(top)))

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        self._run(lambda: self._core.backward(_core_blobs(top), list(propagate_down), _core_blobs(bottom)))

    def __repr__(self) -> str:
        return f"<Layer {self._core.name} ({self.type})>"


class _FileError(RuntimeError, FileNotFoundError):
    """pycaffe's "Could not open file X": a RuntimeError there, and a FileNotFoundError here too."""


def _check_file(path: str) -> None:
    """Fail early, as pycaffe's Net constructor does, on a file that cannot be opened."""
    try:
        with open_regular(path):
            pass
    except OSError as exc:
        reason = f": {exc.strerror}" if isinstance(exc, NotARegularFile) else ""
        raise _FileError(f"Could not open file {path}{reason}") from None


def _read_net_param(path: str) -> caffe_pb2.NetParameter:
    from proto import textio

    return textio.read_net(path)


class Net:
    """pycaffe's Net: ``Net(model, phase, level=0, stages=None, weights=None)``.

    The deprecated ``Net(model, weights, phase)`` is accepted too.
    """

    def __init__(
        self,
        network_file: Any,
        *args: Any,
        level: int = 0,
        stages: Sequence[str] | None = None,
        weights: str | None = None,
        phase: int | None = None,
        _core: core.Net | None = None,
    ) -> None:
        if _core is None:
            if len(args) == 2:  # the deprecated Net(model, weights, phase)
                weights, phase = args
            elif len(args) == 1:
                phase = args[0]
            elif args:
                raise TypeError("Net(network_file, phase, level=0, stages=None, weights=None)")
            if phase not in (TRAIN, TEST):
                raise TypeError("Net needs a phase: engine.TRAIN or engine.TEST")
            if not isinstance(network_file, caffe_pb2.NetParameter):
                _check_file(str(network_file))
            if weights:
                _check_file(str(weights))
            param = (
                network_file
                if isinstance(network_file, caffe_pb2.NetParameter)
                else _read_net_param(str(network_file))
            )
            named = contextlib.nullcontext() if param is network_file else naming_file(str(network_file))
            file = None if param is network_file else str(network_file)
            with named, pymodules.for_nets([file], [param]):  # names the prototxt; its folder after ours
                _core = core.Net(param, phase=phase, level=level, stages=list(stages or []))
        self._net = _core
        python_layers = [layer for layer in _core.layers if isinstance(layer, PythonLayer)]
        self._mirrors = _Mirrors(children=[layer.param_mirrors for layer in python_layers])
        # A Python layer is the script's own object; a built-in one gets a view.
        self._layers: list[Layer] = [
            layer.impl if isinstance(layer, PythonLayer) else _LayerView(layer, self._mirrors)
            for layer in _core.layers
        ]
        self._callbacks: dict[str, list[Callable[[int], None]]] = {
            "before_forward": [],
            "after_forward": [],
            "before_backward": [],
            "after_backward": [],
        }
        if weights:
            self.copy_from(weights)

    # --- the C++-bound surface ---------------------------------------------------------------
    @property
    def _blobs(self) -> list[Blob]:
        return [Blob(b, self._mirrors) for b in self._net.blob_list]

    @property
    def layers(self) -> list[Layer]:
        return list(self._layers)

    @property
    def _blob_names(self) -> list[str]:
        return list(self._net.blob_names)

    @property
    def _layer_names(self) -> list[str]:
        return list(self._net.layer_names)

    @property
    def _inputs(self) -> list[int]:
        return list(self._net.input_blob_indices)

    @property
    def _outputs(self) -> list[int]:
        return list(self._net.output_blob_indices)

    @property
    def _blob_loss_weights(self) -> list[float]:
        return list(self._net.blob_loss_weights)

    def _bottom_ids(self, layer_index: int) -> list[int]:
        return list(self._net.bottom_id_vecs[layer_index])

    def _top_ids(self, layer_index: int) -> list[int]:
        return list(self._net.top_id_vecs[layer_index])

    def _run(self, action: Callable[[], Any]) -> Any:
        self._mirrors.push()
        try:
            return action()
        finally:
            self._mirrors.pull()

    def _forward(self, start: int, end: int) -> float:
        def run() -> float:
            loss = 0.0
            for i in range(start, end + 1):
                for callback in self._callbacks["before_forward"]:
                    callback(i)
                loss += self._net.forward_from_to(i, i)
                for callback in self._callbacks["after_forward"]:
                    callback(i)
            return loss

        if not any(self._callbacks[k] for k in ("before_forward", "after_forward")):
            return self._run(lambda: self._net.forward_from_to(start, end))
        return self._run(run)

    def _backward(self, start: int, end: int) -> None:
        def run() -> None:
            for i in range(start, end - 1, -1):
                for callback in self._callbacks["before_backward"]:
                    callback(i)
                self._net.backward_from_to(i, i)
                for callback in self._callbacks["after_backward"]:
                    callback(i)

        if not any(self._callbacks[k] for k in ("before_backward", "after_backward")):
            self._run(lambda: self._net.backward_from_to(start, end))
        else:
            self._run(run)

    def before_forward(self, callback: Callable[[int], None]) -> None:
        self._callbacks["before_forward"].append(callback)

    def after_forward(self, callback: Callable[[int], None]) -> None:
        self._callbacks["after_forward"].append(callback)

    def before_backward(self, callback: Callable[[int], None]) -> None:
        self._callbacks["before_backward"].append(callback)

    def after_backward(self, callback: Callable[[int], None]) -> None:
        self._callbacks["after_backward"].append(callback)

    def reshape(self) -> None:
        self._run(self._net.reshape)

    def clear_param_diffs(self) -> None:
        self._run(self._net.clear_param_diffs)

    def copy_from(self, filename: str) -> None:
        """Caffe's CopyTrainedLayersFrom: HDF5 weights when the file is HDF5, else a binary caffemodel."""
        from engine.weights import copy_trained_layers_from_file

        self._run(lambda: copy_trained_layers_from_file(self._net, str(filename)))

    def share_with(self, other: Net) -> None:
        self._run(lambda: self._net.share_trained_layers_with(other._net))

    def save(self, filename: str) -> None:
        from engine.weights import write_net_binary

        self._mirrors.push()
        write_net_binary(self._net, str(filename))

    def save_hdf5(self, filename: str) -> None:
        """Caffe's Net::ToHDF5 without diffs: datasets data/LAYER/I, shared params by their owner only."""
        from engine.weights import write_net_hdf5

        self._mirrors.push()
        write_net_hdf5(self._net, str(filename))

    def load_hdf5(self, filename: str) -> None:
        from engine.weights import copy_trained_layers_from_hdf5

        self._run(lambda: copy_trained_layers_from_hdf5(self._net, str(filename)))

    def _set_input_arrays(self, data: np.ndarray, labels: np.ndarray) -> None:
        layer = self._net.layers[0] if self._net.layers else None
        if layer is None or layer.type != "MemoryData":
            raise EngineError("set_input_arrays may only be called if the first layer is a MemoryDataLayer")
        layer.reset(data, labels)  # type: ignore[attr-defined]

    # --- the pure-Python surface (pycaffe.py) ------------------------------------------------
    @property
    def blobs(self) -> OrderedDict[str, Blob]:
        return OrderedDict(zip(self._blob_names, self._blobs))

    @property
    def blob_loss_weights(self) -> OrderedDict[str, float]:
        return OrderedDict(zip(self._blob_names, self._blob_loss_weights))

    @property
    def layer_dict(self) -> OrderedDict[str, Layer]:
        return OrderedDict(zip(self._layer_names, self.layers))

    @property
    def params(self) -> OrderedDict[str, BlobVec]:
        return OrderedDict(
            (name, layer.blobs)
            for name, layer in zip(self._layer_names, self._layers)
            if len(layer.blobs) > 0
        )

    @property
    def inputs(self) -> list[str]:
        return [self._blob_names[i] for i in self._inputs]

    @property
    def outputs(self) -> list[str]:
        return [self._blob_names[i] for i in self._outputs]

    @property
    def top_names(self) -> OrderedDict[str, list[str]]:
        return OrderedDict(
            (name, [self._blob_names[i] for i in self._top_ids(k)])
            for k, name in enumerate(self._layer_names)
        )

    @property
    def bottom_names(self) -> OrderedDict[str, list[str]]:
        return OrderedDict(
            (name, [self._blob_names[i] for i in self._bottom_ids(k)])
            for k, name in enumerate(self._layer_names)
        )

    def forward(
        self,
        blobs: Iterable[str] | None = None,
        start: str | None = None,
        end: str | None = None,
        **kwargs: Any,
    ) -> dict[str, np.ndarray]:
        """Run forward from layer ``start`` to ``end``; inputs as keyword arrays; returns the outputs."""
        extra = list(blobs or [])
        start_ind = self._layer_names.index(start) if start is not None else 0
        if end is not None:
            end_ind = self._layer_names.index(end)
            outputs = set(self.top_names[end] + extra)  # the tops of layer `end`
        else:
            end_ind = len(self._net.layers) - 1
            outputs = set(self.outputs + extra)
        if kwargs:
            if set(kwargs) != set(self.inputs):
                raise Exception("Input blob arguments do not match net inputs.")
            for name, array in kwargs.items():
                if array.shape[0] != self.blobs[name].shape[0]:
                    raise Exception("Input is not batch sized")
                self.blobs[name].data[...] = array
        self._forward(start_ind, end_ind)
        return {name: self.blobs[name].data for name in outputs}

    def backward(
        self,
        diffs: Iterable[str] | None = None,
        start: str | None = None,
        end: str | None = None,
        **kwargs: Any,
    ) -> dict[str, np.ndarray]:
        """Run backward from layer ``start`` down to ``end``; top diffs as keyword arrays; returns diffs."""
        extra = list(diffs or [])
        start_ind = self._layer_names.index(start) if start is not None else len(self._net.layers) - 1
        if end is not None:
            end_ind = self._layer_names.index(end)
            outputs = set(self.bottom_names[end] + extra)  # the bottoms of layer `end`
        else:
            end_ind = 0
            outputs = set(self.inputs + extra)
        if kwargs:
            if set(kwargs) != set(self.outputs):
                raise Exception("Top diff arguments do not match net outputs.")
            for name, array in kwargs.items():
                if array.shape[0] != self.blobs[name].shape[0]:
                    raise Exception("Diff is not batch sized")
                self.blobs[name].diff[...] = array
        self._backward(start_ind, end_ind)
        return {name: self.blobs[name].diff for name in outputs}

    def forward_all(self, blobs: Iterable[str] | None = None, **kwargs: Any) -> dict[str, np.ndarray]:
        """Forward any number of inputs in batches; returns the outputs of all of them."""
        all_outs: dict[str, list[np.ndarray]] = {out: [] for out in set(self.outputs + list(blobs or []))}
        for batch in self._batch(kwargs):
            outs = self.forward(blobs=blobs, **batch)
            for out, out_blob in outs.items():
                all_outs[out].extend(out_blob.copy())
        return self._unpad(all_outs, kwargs)

    def forward_backward_all(
        self, blobs: Iterable[str] | None = None, diffs: Iterable[str] | None = None, **kwargs: Any
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Forward and backward any number of inputs/top diffs in batches."""
        all_outs: dict[str, list[np.ndarray]] = {out: [] for out in set(self.outputs + list(blobs or []))}
        all_diffs: dict[str, list[np.ndarray]] = {d: [] for d in set(self.inputs + list(diffs or []))}
        forward_batches = self._batch({k: v for k, v in kwargs.items() if k in self.inputs})
        backward_batches = self._batch({k: v for k, v in kwargs.items() if k in self.outputs})
        for fb, bb in zip(forward_batches, backward_batches):
            batch_blobs = self.forward(blobs=blobs, **fb)
            batch_diffs = self.backward(diffs=diffs, **bb)
            for out, out_blobs in batch_blobs.items():
                all_outs[out].extend(out_blobs.copy())
            for d, d_blobs in batch_diffs.items():
                all_diffs[d].extend(d_blobs.copy())
        return self._unpad(all_outs, kwargs), self._unpad(all_diffs, kwargs)

    def _unpad(
        self, collected: dict[str, list[np.ndarray]], kwargs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out = {name: np.asarray(values) for name, values in collected.items()}
        if kwargs:
            total = len(next(iter(kwargs.values())))
            out = {name: values[:total] for name, values in out.items()}
        return out

    def set_input_arrays(self, data: np.ndarray, labels: np.ndarray) -> None:
        if labels.ndim == 1:
            labels = np.ascontiguousarray(labels[:, np.newaxis, np.newaxis, np.newaxis])
        self._set_input_arrays(data, labels)

    def _batch(self, blobs: dict[str, np.ndarray]) -> Iterator[dict[str, Any]]:
        """Split arrays into net-sized batches, padding the last one with zeros."""
        if not blobs:
            yield {}
            return
        num = len(next(iter(blobs.values())))
        batch_size = next(iter(self.blobs.values())).shape[0]
        remainder = num % batch_size
        for b in range(num // batch_size):
            i = b * batch_size
            yield {name: blobs[name][i : i + batch_size] for name in blobs}
        if remainder > 0:
            padded = {}
            for name in blobs:
                pad_shape = (batch_size - remainder, *blobs[name].shape[1:])
                padded[name] = np.concatenate([blobs[name][-remainder:], np.zeros(pad_shape)])
            yield padded

    @property
    def core(self) -> core.Net:
        """The engine Net underneath (not part of pycaffe)."""
        return self._net


class Timer:
    """pycaffe's Timer: ``start()``, ``stop()`` and ``ms``, the milliseconds from start to stop.

    Starting a running timer or stopping a stopped one does nothing; reading ``ms`` stops a running
    one; a timer never started reads 0. In GPU mode the device is synchronised at start and stop,
    so queued kernels count where they were launched.
    """

    def __init__(self) -> None:
        self._running = False
        self._started = 0.0
        self._stopped = 0.0
        self._ever_ran = False

    def start(self) -> None:
        if not self._running:
            backend.synchronize()
            self._started = time.perf_counter()
            self._running = True
            self._ever_ran = True

    def stop(self) -> None:
        if self._running:
            backend.synchronize()
            self._stopped = time.perf_counter()
            self._running = False

    @property
    def ms(self) -> float:
        if not self._ever_ran:
            return 0.0
        self.stop()
        return (self._stopped - self._started) * 1000.0


# --- pycaffe's module-level helpers (multi-GPU and logging switches; one process, one solver here) ---
_solver_count = 1
_solver_rank = 0
_multiprocess = False


def init_log(level: int = 0, stderr: bool = True) -> None:
    """Route the engine's log lines (logger 'engine') to stderr, as glog does once initialised."""
    import logging

    logging.basicConfig(level=logging.INFO if level <= 0 else logging.WARNING)


def log(message: str) -> None:
    import logging

    logging.getLogger("engine").info(message)


def has_nccl() -> bool:
    return False  # no multi-GPU data parallelism: one solver per process


def solver_count() -> int:
    return _solver_count


def set_solver_count(count: int) -> None:
    global _solver_count
    _solver_count = int(count)


def solver_rank() -> int:
    return _solver_rank


def set_solver_rank(rank: int) -> None:
    global _solver_rank
    _solver_rank = int(rank)


def set_multiprocess(multiprocess: bool) -> None:
    global _multiprocess
    _multiprocess = bool(multiprocess)
