"""Net: a DAG of layers built from a NetParameter exactly as Caffe builds it.

Building is: filter by phase/level/stages -> InsertSplits -> for each layer in order, wire its
bottoms and tops (in place when top i names bottom i), set it up (shape inference), note its loss
weights, decide whether it needs backward, and collect its parameters (shared by ParamSpec name).
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, cast

import numpy as np

from engine import backend, fusion, weights
from engine.blob import Blob, shape_string
from engine.data.paths import DEFAULT, DataPaths
from engine.errors import EngineError, LayerOutOfMemoryError, NetError, UnknownTypeError
from engine.insert_splits import insert_splits
from engine.layers import Layer, create_layer
from engine.netstate import filter_net, make_state
from proto import caffe_pb2

log = logging.getLogger("engine.net")


class Net:
    def __init__(
        self,
        param: caffe_pb2.NetParameter,
        phase: int | None = None,
        level: int | None = None,
        stages: Iterable[str] | None = None,
        dtype: Any = np.float32,
        xp: ModuleType | None = None,
        data_paths: DataPaths = DEFAULT,
    ) -> None:
        """``data_paths``: where the data files its layers name are looked for (engine/data/paths.py)."""
        param_copy = caffe_pb2.NetParameter()
        param_copy.CopyFrom(param)
        if phase is not None:
            param_copy.state.phase = cast(caffe_pb2.Phase, phase)
        if level is not None:
            param_copy.state.level = level
        if stages is not None:  # added to the file's own, as Net(file, phase, level, &stages) does
            param_copy.state.stage.extend(stages)
        self.xp = xp if xp is not None else backend.array_module()
        self.dtype = np.dtype(dtype)
        self.data_paths = data_paths
        self.debug_info = param_copy.debug_info
        self.logger: Callable[[str], None] = log.info
        self._init(param_copy)

    # --- building ----------------------------------------------------------------------------
    def _init(self, in_param: caffe_pb2.NetParameter) -> None:
        self.phase = in_param.state.phase
        self.name = in_param.name
        param = insert_splits(
            filter_net(in_param, make_state(self.phase, in_param.state.level, in_param.state.stage))
        )
        self.net_param = param
        self.layers: list[Layer] = []
        self.layer_names: list[str] = []
        self.blob_list: list[Blob] = []
        self.blob_names: list[str] = []
        self.blob_need_backward: list[bool] = []
        self.blob_loss_weights: list[float] = []
        self.bottom_vecs: list[list[Blob]] = []
        self.bottom_id_vecs: list[list[int]] = []
        self.bottom_need_backward: list[list[bool]] = []
        self.top_vecs: list[list[Blob]] = []
        self.top_id_vecs: list[list[int]] = []
        self.layer_need_backward: list[bool] = []
        self.input_blob_indices: list[int] = []
        self.params: list[Blob] = []
        self.param_owners: list[int] = []
        self.param_display_names: list[str] = []
        self.param_layer_indices: list[tuple[int, int]] = []
        self.param_id_vecs: list[list[int]] = []
        self.learnable_params: list[Blob] = []
        self.learnable_param_ids: list[int] = []
        self.params_lr: list[float] = []
        self.params_weight_decay: list[float] = []
        self._has_params_lr: list[bool] = []
        self._has_params_decay: list[bool] = []
        self._param_names_index: dict[str, int] = {}
        blob_index: dict[str, int] = {}
        available: set[str] = set()

        for layer_id, source in enumerate(param.layer):
            layer_param = caffe_pb2.LayerParameter()
            layer_param.CopyFrom(source)
            if not layer_param.HasField("phase"):
                layer_param.phase = self.phase
            if layer_param.propagate_down and len(layer_param.propagate_down) != len(layer_param.bottom):
                raise NetError(
                    f"layer '{layer_param.name}': propagate_down must be given 0 or "
                    f"{len(layer_param.bottom)} times (once per bottom), "
                    f"got {len(layer_param.propagate_down)}"
                )
            try:
                layer = create_layer(layer_param, xp=self.xp, dtype=self.dtype)
            except UnknownTypeError as exc:  # Caffe's text names only the type: say which layer
                raise _in_layer(exc, f"layer '{layer_param.name}': ") from None
            layer.data_paths = self.data_paths
            self.layers.append(layer)
            self.layer_names.append(layer_param.name)
            self.bottom_vecs.append([])
            self.bottom_id_vecs.append([])
            self.bottom_need_backward.append([])
            self.top_vecs.append([])
            self.top_id_vecs.append([])
            self.param_id_vecs.append([])
            need_backward = False
            for bottom_id, blob_name in enumerate(layer_param.bottom):
                if blob_name not in available:
                    raise NetError(
                        f"Unknown bottom blob '{blob_name}' "
                        f"(layer '{layer_param.name}', bottom index {bottom_id})"
                    )
                blob_id = blob_index[blob_name]
                self.bottom_vecs[-1].append(self.blob_list[blob_id])
                self.bottom_id_vecs[-1].append(blob_id)
                available.discard(blob_name)
                wants = self.blob_need_backward[blob_id]
                if layer_param.propagate_down:
                    wants = layer_param.propagate_down[bottom_id]
                self.bottom_need_backward[-1].append(wants)
                need_backward |= self.blob_need_backward[blob_id]
            for top_id in range(len(layer_param.top)):
                self._append_top(layer_param, layer_id, top_id, available, blob_index)
                if layer_param.type == "Input":
                    self.input_blob_indices.append(len(self.blob_list) - 1)
            if layer.auto_top_blobs:
                needed = max(layer.min_top, layer.exact_num_top)
                for top_id in range(len(layer_param.top), needed):
                    self._append_top(layer_param, layer_id, top_id, None, None)
            try:
                layer.setup(self.bottom_vecs[layer_id], self.top_vecs[layer_id])
            except NetError:
                raise
            except EngineError as exc:  # a filler's or a data source's complaint: add the layer's name
                raise _in_layer(exc, f"layer '{layer_param.name}' ({layer_param.type}): ") from exc
            except Exception as exc:  # a layer's own check: name the layer and the shapes it saw
                shapes = ", ".join(shape_string(b.shape) for b in self.bottom_vecs[layer_id]) or "none"
                raise NetError(
                    f"layer '{layer_param.name}' ({layer_param.type}) cannot be set up with bottom shapes "
                    f"[{shapes}]: {exc}"
                ) from exc
            for top_id, blob_id in enumerate(self.top_id_vecs[layer_id]):
                self.blob_loss_weights[blob_id] = layer.loss(top_id)
            specs = list(layer.param.param)
            for param_id in range(len(layer.blobs)):
                spec = specs[param_id] if param_id < len(specs) else caffe_pb2.ParamSpec()
                learns = spec.lr_mult != 0
                need_backward |= learns
                layer.param_propagate_down[param_id] = learns
            if len(specs) > len(layer.blobs):
                raise NetError(f"Too many params specified for layer '{layer_param.name}'")
            for param_id in range(len(layer.blobs)):
                self._append_param(layer_id, param_id)
            self.layer_need_backward.append(need_backward)
            if need_backward:
                for blob_id in self.top_id_vecs[layer_id]:
                    self.blob_need_backward[blob_id] = True

        self._prune_backward()
        if param.force_backward:
            self._force_backward()
        # What no layer consumed is an output, in name order: Caffe keeps these names in a std::set.
        self.output_blob_indices = [blob_index[name] for name in sorted(available)]
        # Name lookups keep the last blob / layer of a name, as Caffe's name -> index maps do.
        self._blob_index = {name: blob_id for blob_id, name in enumerate(self.blob_names)}
        self._layer_index = {name: layer_id for layer_id, name in enumerate(self.layer_names)}
        self._share_weights()
        self.fused = fusion.groups(self.layers, self.bottom_vecs, self.top_vecs, self.xp)

    def _append_top(
        self,
        layer_param: caffe_pb2.LayerParameter,
        layer_id: int,
        top_id: int,
        available: set[str] | None,
        blob_index: dict[str, int] | None,
    ) -> None:
        name = layer_param.top[top_id] if top_id < len(layer_param.top) else "(automatic)"
        in_place = (
            blob_index is not None and top_id < len(layer_param.bottom) and name == layer_param.bottom[top_id]
        )
        if in_place:
            assert blob_index is not None
            blob_id = blob_index[name]
        elif blob_index is not None and name in blob_index:
            raise NetError(f"Top blob '{name}' produced by multiple sources (layer '{layer_param.name}')")
        else:
            blob_id = len(self.blob_list)
            self.blob_list.append(Blob((), self.dtype, self.xp))
            self.blob_names.append(name)
            self.blob_need_backward.append(False)
            self.blob_loss_weights.append(0.0)
            if blob_index is not None:
                blob_index[name] = blob_id
        self.top_vecs[layer_id].append(self.blob_list[blob_id])
        self.top_id_vecs[layer_id].append(blob_id)
        if available is not None:
            available.add(name)

    def _append_param(self, layer_id: int, param_id: int) -> None:
        layer = self.layers[layer_id]
        specs = layer.param.param
        spec = specs[param_id] if param_id < len(specs) else caffe_pb2.ParamSpec()
        name = spec.name
        self.param_display_names.append(name or str(param_id))
        net_param_id = len(self.params)
        self.params.append(layer.blobs[param_id])
        self.param_id_vecs[layer_id].append(net_param_id)
        self.param_layer_indices.append((layer_id, param_id))
        if not name or name not in self._param_names_index:
            self.param_owners.append(-1)
            if name:
                self._param_names_index[name] = net_param_id
            self.learnable_param_ids.append(len(self.learnable_params))
            self.learnable_params.append(layer.blobs[param_id])
            self._has_params_lr.append(spec.HasField("lr_mult"))
            self._has_params_decay.append(spec.HasField("decay_mult"))
            self.params_lr.append(spec.lr_mult)
            self.params_weight_decay.append(spec.decay_mult)
            return
        owner_id = self._param_names_index[name]
        self.param_owners.append(owner_id)
        owner_layer, owner_param = self.param_layer_indices[owner_id]
        mine, theirs = layer.blobs[param_id], self.layers[owner_layer].blobs[owner_param]
        owner_name = self.layer_names[owner_layer]
        if spec.share_mode == caffe_pb2.ParamSpec.PERMISSIVE:
            if mine.count() != theirs.count():
                raise NetError(
                    f"Cannot share param '{name}' owned by layer '{owner_name}' with layer '{layer.name}'; "
                    f"count mismatch. Owner layer param shape is {shape_string(theirs.shape)}; "
                    f"sharing layer shape is {shape_string(mine.shape)}"
                )
        elif mine.shape != theirs.shape:
            raise NetError(
                f"Cannot share param '{name}' owned by layer '{owner_name}' with layer '{layer.name}'; "
                f"shape mismatch. Owner layer param shape is {shape_string(theirs.shape)}; "
                f"sharing layer expects shape {shape_string(mine.shape)}"
            )
        learnable_id = self.learnable_param_ids[owner_id]
        self.learnable_param_ids.append(learnable_id)
        for has, values, field, what in (
            (self._has_params_lr, self.params_lr, "lr_mult", "lr_mult"),
            (self._has_params_decay, self.params_weight_decay, "decay_mult", "decay_mult"),
        ):
            if not spec.HasField(field):
                continue
            if has[learnable_id]:
                if getattr(spec, field) != values[learnable_id]:
                    raise NetError(f"Shared param '{name}' has mismatched {what}.")
            else:
                has[learnable_id] = True
                values[learnable_id] = getattr(spec, field)

    def _prune_backward(self) -> None:
        """Walk backwards: skip layers whose tops reach no loss, or whose bottoms all skip backprop."""
        under_loss: set[str] = set()
        skip_backprop: set[str] = set()
        for layer_id in range(len(self.layers) - 1, -1, -1):
            layer = self.layers[layer_id]
            contributes = False
            skip_down = True
            for top_id, blob_id in enumerate(self.top_id_vecs[layer_id]):
                name = self.blob_names[blob_id]
                if layer.loss(top_id) or name in under_loss:
                    contributes = True
                if name not in skip_backprop:
                    skip_down = False
                if contributes and not skip_down:
                    break
            if self.layer_need_backward[layer_id] and skip_down:
                self.layer_need_backward[layer_id] = False
                self.bottom_need_backward[layer_id] = [False] * len(self.bottom_vecs[layer_id])
            if not contributes:
                self.layer_need_backward[layer_id] = False
            for bottom_id, blob_id in enumerate(self.bottom_id_vecs[layer_id]):
                name = self.blob_names[blob_id]
                if contributes:
                    under_loss.add(name)
                else:
                    self.bottom_need_backward[layer_id][bottom_id] = False
                if not self.bottom_need_backward[layer_id][bottom_id]:
                    skip_backprop.add(name)

    def _force_backward(self) -> None:
        for layer_id, layer in enumerate(self.layers):
            self.layer_need_backward[layer_id] = True
            for bottom_id, blob_id in enumerate(self.bottom_id_vecs[layer_id]):
                wants = self.bottom_need_backward[layer_id][bottom_id] or layer.allow_force_backward(
                    bottom_id
                )
                self.bottom_need_backward[layer_id][bottom_id] = wants
                self.blob_need_backward[blob_id] = self.blob_need_backward[blob_id] or wants
            layer.param_propagate_down = [True] * len(layer.blobs)

    def _share_weights(self) -> None:
        for param_id, owner in enumerate(self.param_owners):
            if owner >= 0:
                self.params[param_id].share_data(self.params[owner])
                self.params[param_id].share_diff(self.params[owner])

    # --- running -----------------------------------------------------------------------------
    def forward_from_to(self, start: int = 0, end: int | None = None) -> float:
        """Run layers ``start`` to ``end`` (both included); the loss they add up, weighted."""
        end = len(self.layers) - 1 if end is None else end
        self._check_range("forward", start, end)
        losses = []
        fused = {} if self.debug_info else self.fused
        i = start - 1
        while i < end:
            i += 1
            layer, bottom, top = self.layers[i], self.bottom_vecs[i], self.top_vecs[i]
            _reshape(layer, bottom, top)
            group = fused.get(i)
            if group is not None and i + group.size - 1 <= end:  # BatchNorm, Scale (ReLU) as one
                for j in range(i + 1, i + group.size):
                    _reshape(self.layers[j], self.bottom_vecs[j], self.top_vecs[j])
                if self._run(layer, "forward", group.forward):
                    i += group.size - 1
                    continue
            self._run(layer, "forward", layer.forward, bottom, top)
            for top_id, blob in enumerate(top):
                if layer.loss(top_id):  # the diff of a loss top holds its weight (Layer.set_loss_weights)
                    losses.append(self.xp.dot(blob.data.reshape(-1), blob.diff.reshape(-1)))
            if self.debug_info:
                self._forward_debug_info(i)
        return float(sum(losses)) if losses else 0.0  # one device sync, at the end

    def forward_from(self, start: int) -> float:
        return self.forward_from_to(start, len(self.layers) - 1)

    def forward_to(self, end: int) -> float:
        return self.forward_from_to(0, end)

    def forward(self) -> tuple[list[Blob], float]:
        loss = self.forward_from_to()
        return self.output_blobs, loss

    def backward_from_to(self, start: int | None = None, end: int = 0) -> None:
        """Backpropagate through layers ``start`` down to ``end`` (both included) that need it."""
        start = len(self.layers) - 1 if start is None else start
        self._check_range("backward", end, start)
        fused = {} if self.debug_info else self.fused
        i = start + 1
        while i > end:
            i -= 1
            if not self.layer_need_backward[i]:
                continue
            layer = self.layers[i]
            group = self._group_ending_at(fused, i, end)
            if group is not None and self._run(layer, "backward", group.backward):
                i -= group.size - 1
                continue
            top, down, bottom = self.top_vecs[i], self.bottom_need_backward[i], self.bottom_vecs[i]
            self._run(layer, "backward", layer.backward, top, down, bottom)
            if self.debug_info:
                self._backward_debug_info(i)

    def _group_ending_at(self, fused: dict[int, Any], i: int, end: int) -> Any:
        """The fused group whose last layer is layer i, where its layers are all at or after ``end``
        and all backpropagate, each to its bottom; else None."""
        for first in range(max(end, i - 2), i):
            group = fused.get(first)
            if group is not None and first + group.size - 1 == i:
                layers = range(first, i + 1)
                if all(self.layer_need_backward[j] and all(self.bottom_need_backward[j]) for j in layers):
                    return group
        return None

    @staticmethod
    def _run(layer: Layer, what: str, step: Callable[..., Any], *args: Any) -> Any:
        """``step(*args)`` of ``layer``, an out-of-memory error named after the layer."""
        try:
            return step(*args)
        except MemoryError as exc:
            raise _out_of_memory(layer, what, exc) from exc

    def backward_from(self, start: int) -> None:
        self.backward_from_to(start, 0)

    def backward_to(self, end: int) -> None:
        self.backward_from_to(len(self.layers) - 1, end)

    def _check_range(self, what: str, first: int, last: int) -> None:
        """Caffe CHECKs only the outer ends: the first layer >= 0, the last < the number of layers."""
        if first < 0 or last >= len(self.layers):
            raise NetError(
                f"cannot run {what} over layers {first}..{last}: the net has layers 0..{len(self.layers) - 1}"
            )

    def backward(self) -> None:
        self.backward_from_to()
        if self.debug_info:
            params = self.learnable_params
            l1_data = sum(b.asum_data() for b in params)
            l1_diff = sum(b.asum_diff() for b in params)
            l2_data = sum(float((b.data * b.data).sum()) for b in params) ** 0.5
            l2_diff = sum(float((b.diff * b.diff).sum()) for b in params) ** 0.5
            self.logger(
                f"    [Backward] All net params (data, diff): L1 norm = ({l1_data:g}, {l1_diff:g}); "
                f"L2 norm = ({l2_data:g}, {l2_diff:g})"
            )

    def forward_backward(self) -> float:
        loss = self.forward_from_to()
        self.backward()
        return loss

    def reshape(self) -> None:
        for layer, bottom, top in zip(self.layers, self.bottom_vecs, self.top_vecs):
            _reshape(layer, bottom, top)

    def update(self) -> None:
        for blob in self.learnable_params:
            blob.data -= blob.diff

    def clear_param_diffs(self) -> None:
        for blob in self.learnable_params:
            blob.diff[...] = 0

    # --- accessors ---------------------------------------------------------------------------
    @property
    def input_blobs(self) -> list[Blob]:
        return [self.blob_list[i] for i in self.input_blob_indices]

    @property
    def output_blobs(self) -> list[Blob]:
        return [self.blob_list[i] for i in self.output_blob_indices]

    @property
    def input_blob_names(self) -> list[str]:
        return [self.blob_names[i] for i in self.input_blob_indices]

    @property
    def output_blob_names(self) -> list[str]:
        return [self.blob_names[i] for i in self.output_blob_indices]

    def has_blob(self, name: str) -> bool:
        return name in self._blob_index

    def blob_by_name(self, name: str) -> Blob:
        try:
            return self.blob_list[self._blob_index[name]]
        except KeyError:
            raise NetError(f"Unknown blob name '{name}'") from None

    def has_layer(self, name: str) -> bool:
        return name in self._layer_index

    def layer_by_name(self, name: str) -> Layer:
        try:
            return self.layers[self._layer_index[name]]
        except KeyError:
            raise NetError(f"Unknown layer name '{name}'") from None

    @property
    def has_params_lr(self) -> list[bool]:
        """Per learnable param: whether some ParamSpec sharing it set lr_mult explicitly."""
        return list(self._has_params_lr)

    @property
    def has_params_decay(self) -> list[bool]:
        return list(self._has_params_decay)

    @property
    def param_names_index(self) -> dict[str, int]:
        """A shared param's name -> the index in ``params`` of the blob that owns it."""
        return dict(self._param_names_index)

    def named_blobs(self) -> OrderedDict[str, Blob]:
        return OrderedDict((name, self.blob_list[i]) for i, name in enumerate(self.blob_names))

    # --- weights -----------------------------------------------------------------------------
    def copy_trained_layers_from(self, source: caffe_pb2.NetParameter | str | os.PathLike[str]) -> None:
        """Caffe's ``CopyTrainedLayersFrom``: give each layer the blobs of the source layer of its name.

        ``source`` is a NetParameter, or a weights file: HDF5 when the file is HDF5, else a binary
        caffemodel, parsed and upgraded (V0, V1, ...) as ``ReadNetParamsFromBinaryFileOrDie`` does.
        The rules (matching by name, shape checks, nothing written unless all fits) are engine.weights'.
        """
        weights.copy_trained_layers_from(self, source)

    def to_proto(self, write_diff: bool = False) -> caffe_pb2.NetParameter:
        """The net as Caffe serialises it: its name and every layer as built (splits included)."""
        out = caffe_pb2.NetParameter(name=self.name)
        for layer in self.layers:
            layer_param = out.layer.add()
            layer_param.CopyFrom(layer.param)
            del layer_param.blobs[:]
            for blob in layer.blobs:
                layer_param.blobs.append(blob.to_proto(write_diff))
        return out

    def share_trained_layers_with(self, other: Net) -> None:
        for name, layer in zip(other.layer_names, other.layers):
            if name not in self.layer_names:
                continue
            target = self.layers[self.layer_names.index(name)].blobs
            if len(target) != len(layer.blobs):
                raise NetError(f"Incompatible number of blobs for layer {name}")
            for mine, theirs in zip(target, layer.blobs):
                if mine.shape != theirs.shape:
                    raise NetError(f"Cannot share param weights from layer '{name}'; shape mismatch")
                mine.share_data(theirs)

    def close(self) -> None:
        """Stop the layers' background work (data prefetch threads); the net is unusable after."""
        for layer in self.layers:
            close = getattr(layer, "close", None)
            if close is not None:
                close()

    def to(self, xp: ModuleType) -> None:
        """Move every blob and parameter to another array module (numpy <-> cupy)."""
        if xp is self.xp:
            return
        moved: set[int] = set()
        for blob in self.blob_list:
            if id(blob) not in moved:
                blob.to(xp)
                moved.add(id(blob))
        for layer in self.layers:
            layer.to(xp)
        self.xp = xp
        self._share_weights()
        self.fused = fusion.groups(self.layers, self.bottom_vecs, self.top_vecs, xp)
        self.reshape()

    # --- debug_info --------------------------------------------------------------------------
    def _forward_debug_info(self, layer_id: int) -> None:
        name = self.layer_names[layer_id]
        for blob, blob_id in zip(self.top_vecs[layer_id], self.top_id_vecs[layer_id]):
            mean = blob.asum_data() / max(blob.count(), 1)
            self.logger(f"    [Forward] Layer {name}, top blob {self.blob_names[blob_id]} data: {mean:g}")
        for blob, net_param_id in zip(self.layers[layer_id].blobs, self.param_id_vecs[layer_id]):
            mean = blob.asum_data() / max(blob.count(), 1)
            display = self.param_display_names[net_param_id]
            self.logger(f"    [Forward] Layer {name}, param blob {display} data: {mean:g}")

    def _backward_debug_info(self, layer_id: int) -> None:
        name = self.layer_names[layer_id]
        for bottom_id, (blob, blob_id) in enumerate(
            zip(self.bottom_vecs[layer_id], self.bottom_id_vecs[layer_id])
        ):
            if self.bottom_need_backward[layer_id][bottom_id]:
                mean = blob.asum_diff() / max(blob.count(), 1)
                self.logger(
                    f"    [Backward] Layer {name}, bottom blob {self.blob_names[blob_id]} diff: {mean:g}"
                )
        layer = self.layers[layer_id]
        for param_id, blob in enumerate(layer.blobs):
            if layer.param_propagate_down[param_id]:
                mean = blob.asum_diff() / max(blob.count(), 1)
                self.logger(f"    [Backward] Layer {name}, param blob {param_id} diff: {mean:g}")

    # Caffe 1.0 declares Net::UpdateDebugInfo (the "[Update] Layer ..." lines) but nothing calls it
    # since its Net::Update became a plain loop over the learnable params: debug_info prints the
    # [Forward] and [Backward] lines only, and so does this engine (tests/engine/test_net.py).


def _reshape(layer: Layer, bottom: list[Blob], top: list[Blob]) -> None:
    """A layer's reshape; a blob's refusal of its new shape (a ValueError) names the layer."""
    try:
        layer.reshape(bottom, top)
    except ValueError as exc:
        if isinstance(exc, EngineError):
            raise
        shapes = ", ".join(shape_string(b.shape) for b in bottom) or "none"
        raise NetError(
            f"layer '{layer.name}' ({layer.type}) cannot be reshaped for bottom shapes [{shapes}]: {exc}"
        ) from exc


def _out_of_memory(layer: Layer, what: str, exc: MemoryError) -> LayerOutOfMemoryError:
    return LayerOutOfMemoryError(f"layer '{layer.name}' ({layer.type}) ran out of memory in {what}: {exc}")


def _in_layer(exc: EngineError, prefix: str) -> EngineError:
    """The same kind of error as ``exc``, its message prefixed (a NetError if the type will not take one)."""
    try:
        return type(exc)(prefix + str(exc))
    except Exception:
        return NetError(prefix + str(exc))
