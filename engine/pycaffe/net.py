"""pycaffe's Net, so scripts written for pycaffe run with ``import engine as caffe``.

It holds an engine Net and presents it as pycaffe does: ``net.blobs`` and ``net.params`` as
ordered dicts of blobs whose ``.data`` / ``.diff`` are writable numpy arrays, ``forward`` and
``backward`` taking and returning dicts of arrays, the underscore names pycaffe.py builds on
(``_blob_names``, ``_forward``, ...), and the hooks run around each layer. ``net.layers`` holds
the script's own objects for Python layers and views (same surface) for the built-in ones.

On the GPU backend the arrays handed out are host copies (engine/pycaffe/host_copies.py), synced
around every run of the engine.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from engine import net as engine_net
from engine import pymodules
from engine.errors import EngineError, naming_file
from engine.layers.python_layer import PythonLayer
from engine.pycaffe import batches, files
from engine.pycaffe.blob import Blob, BlobVec
from engine.pycaffe.host_copies import HostCopies
from engine.pycaffe.layer import Layer
from engine.pycaffe.layer_view import LayerView
from proto import caffe_pb2

TRAIN = caffe_pb2.TRAIN
TEST = caffe_pb2.TEST
HOOKS = ("before_forward", "after_forward", "before_backward", "after_backward")


def _build(network_file: Any, phase: int, level: int, stages: Sequence[str] | None) -> engine_net.Net:
    """The engine Net of a prototxt (its Python layers' modules from its folder, after ours)."""
    if isinstance(network_file, caffe_pb2.NetParameter):
        with pymodules.for_nets([None], [network_file]):
            return engine_net.Net(network_file, phase=phase, level=level, stages=list(stages or []))
    path = str(network_file)
    param = files.read_net(path)
    with naming_file(path), pymodules.for_nets([path], [param]):
        return engine_net.Net(param, phase=phase, level=level, stages=list(stages or []))


class Net:
    """pycaffe's Net: ``Net(model, phase, level=0, stages=None, weights=None)``.

    The deprecated ``Net(model, weights, phase)`` is accepted too; ``Net.around(engine_net)``
    presents a net the engine built (a solver's).
    """

    def __init__(
        self,
        network_file: Any,
        *args: Any,
        level: int = 0,
        stages: Sequence[str] | None = None,
        weights: str | None = None,
        phase: int | None = None,
    ) -> None:
        if len(args) == 2:  # the deprecated Net(model, weights, phase)
            weights, phase = args
        elif len(args) == 1:
            phase = args[0]
        elif args:
            raise TypeError("Net(network_file, phase, level=0, stages=None, weights=None)")
        if phase not in (TRAIN, TEST):
            raise TypeError("Net needs a phase: engine.TRAIN or engine.TEST")
        if not isinstance(network_file, caffe_pb2.NetParameter):
            files.check_file(str(network_file))
        if weights:
            files.check_file(str(weights))
        self._present(_build(network_file, phase, level, stages))
        if weights:
            self.copy_from(weights)

    @classmethod
    def around(cls, net: engine_net.Net) -> Net:
        """The pycaffe Net of an engine Net (not part of pycaffe)."""
        wrapper = cls.__new__(cls)
        wrapper._present(net)
        return wrapper

    def _present(self, net: engine_net.Net) -> None:
        self._net = net
        python_layers = [layer for layer in net.layers if isinstance(layer, PythonLayer)]
        self._copies = HostCopies(children=[layer.param_copies for layer in python_layers])
        # A Python layer is the script's own object; a built-in one gets a view.
        self._layers: list[Layer] = [
            layer.impl if isinstance(layer, PythonLayer) else LayerView(layer, self._copies)
            for layer in net.layers
        ]
        self._hooks: dict[str, list[Callable[[int], None]]] = {name: [] for name in HOOKS}

    @property
    def core(self) -> engine_net.Net:
        """The engine Net underneath (not part of pycaffe)."""
        return self._net

    def synced(self) -> contextlib.AbstractContextManager[None]:
        """Around a run of the engine: handed-out arrays go to the device and back (not pycaffe's)."""
        return self._copies.synced()

    # --- the C++-bound surface ---------------------------------------------------------------
    @property
    def _blobs(self) -> list[Blob]:
        return [Blob(b, self._copies) for b in self._net.blob_list]

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

    def _forward(self, start: int, end: int) -> float:
        with self.synced():
            if not (self._hooks["before_forward"] or self._hooks["after_forward"]):
                return self._net.forward_from_to(start, end)
            loss = 0.0
            for i in range(start, end + 1):
                self._call_hooks("before_forward", i)
                loss += self._net.forward_from_to(i, i)
                self._call_hooks("after_forward", i)
            return loss

    def _backward(self, start: int, end: int) -> None:
        with self.synced():
            if not (self._hooks["before_backward"] or self._hooks["after_backward"]):
                self._net.backward_from_to(start, end)
                return
            for i in range(start, end - 1, -1):
                self._call_hooks("before_backward", i)
                self._net.backward_from_to(i, i)
                self._call_hooks("after_backward", i)

    def _call_hooks(self, name: str, layer_index: int) -> None:
        for hook in self._hooks[name]:
            hook(layer_index)

    def before_forward(self, callback: Callable[[int], None]) -> None:
        self._hooks["before_forward"].append(callback)

    def after_forward(self, callback: Callable[[int], None]) -> None:
        self._hooks["after_forward"].append(callback)

    def before_backward(self, callback: Callable[[int], None]) -> None:
        self._hooks["before_backward"].append(callback)

    def after_backward(self, callback: Callable[[int], None]) -> None:
        self._hooks["after_backward"].append(callback)

    def reshape(self) -> None:
        with self.synced():
            self._net.reshape()

    def clear_param_diffs(self) -> None:
        with self.synced():
            self._net.clear_param_diffs()

    def copy_from(self, filename: str) -> None:
        """Caffe's CopyTrainedLayersFrom: HDF5 weights when the file is HDF5, else a binary caffemodel."""
        from engine.weights import copy_trained_layers_from_file

        with self.synced():
            copy_trained_layers_from_file(self._net, str(filename))

    def share_with(self, other: Net) -> None:
        with self.synced():
            self._net.share_trained_layers_with(other.core)

    def save(self, filename: str) -> None:
        from engine.weights import write_net_binary

        self._copies.push()
        write_net_binary(self._net, str(filename))

    def save_hdf5(self, filename: str) -> None:
        """Caffe's Net::ToHDF5 without diffs: datasets data/LAYER/I, shared params by their owner only."""
        from engine.weights import write_net_hdf5

        self._copies.push()
        write_net_hdf5(self._net, str(filename))

    def load_hdf5(self, filename: str) -> None:
        from engine.weights import copy_trained_layers_from_hdf5

        with self.synced():
            copy_trained_layers_from_hdf5(self._net, str(filename))

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
        return batches.forward_all(self, blobs, kwargs)

    def forward_backward_all(
        self, blobs: Iterable[str] | None = None, diffs: Iterable[str] | None = None, **kwargs: Any
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Forward and backward any number of inputs/top diffs in batches."""
        return batches.forward_backward_all(self, blobs, diffs, kwargs)

    def set_input_arrays(self, data: np.ndarray, labels: np.ndarray) -> None:
        if labels.ndim == 1:
            labels = np.ascontiguousarray(labels[:, np.newaxis, np.newaxis, np.newaxis])
        self._set_input_arrays(data, labels)
