"""The Layer protocol, as Caffe's: setup -> reshape -> forward / backward.

A layer reads its options from its own ``*_param`` message in ``self.param`` (a LayerParameter
whose ``phase`` the net has already set). Learnable parameters live in ``self.blobs``; layers
*accumulate* into their diffs (``+=``) because the solver clears them once per iteration and
shared parameters add up their gradients. Tops are written in place. Arrays come from
``self.xp`` (numpy or cupy) and are of ``self.dtype``.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from engine.blob import Blob, shape_string
from engine.data.paths import DEFAULT, DataPaths
from engine.errors import BackwardNotImplementedError, LayerSetupError
from engine.layers.facts import ParamBlob
from proto import caffe_pb2

Shape = tuple[int, ...]


class Layer:
    type: ClassVar[str] = ""
    # Blob-count contracts, checked before layer_setup (-1: no constraint).
    exact_num_bottom: ClassVar[int] = -1
    min_bottom: ClassVar[int] = -1
    max_bottom: ClassVar[int] = -1
    exact_num_top: ClassVar[int] = -1
    min_top: ClassVar[int] = -1
    max_top: ClassVar[int] = -1
    equal_num_bottom_top: ClassVar[bool] = False
    # When True the net creates anonymous tops up to the required count (Caffe's AutoTopBlobs).
    auto_top_blobs: ClassVar[bool] = False
    # What the type is, for whoever describes it without setting it up (see engine/layers/facts.py).
    family: ClassVar[str] = ""  # one of facts.FAMILIES
    params: ClassVar[tuple[str, ...]] = ()  # the ``*_param`` messages it reads, most specific first
    # A new layer of the type: its parameters as prototxt (the values Caffe's examples start from,
    # so it runs once wired) and its tops ("{name}": the layer's; default: one top named after it).
    template: ClassVar[str] = ""
    top_names: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def new_tops(cls, name: str) -> list[str]:
        """The tops a new layer called ``name`` gets."""
        if cls.top_names:
            return [top.format(name=name) for top in cls.top_names]
        return [] if cls.exact_num_top == 0 else [name]

    @classmethod
    def learnable_blobs(cls, param: caffe_pb2.LayerParameter) -> list[ParamBlob] | None:
        """The blobs a layer of this type described by ``param`` learns (None: only its code knows)."""
        return []

    @classmethod
    def static_problems(cls, param: caffe_pb2.LayerParameter) -> Iterator[str]:
        """What set-up would refuse in ``param`` that needs no blob shapes (num_output > 0, ...)."""
        return iter(())

    @classmethod
    def bottoms_needed(cls, param: caffe_pb2.LayerParameter) -> int:
        """The fewest bottoms a layer of this type can be set up with."""
        return max(cls.exact_num_bottom, cls.min_bottom, 0)

    def param_shapes(self, bottom: list[Blob]) -> list[Shape] | None:
        """The shapes set-up would give ``self.blobs`` for ``bottom``, without filling them;
        None where only setting up tells (declared by layers whose weights are big)."""
        return None

    def __init__(self, param: caffe_pb2.LayerParameter, xp: ModuleType = np, dtype: Any = np.float32):
        self.param = param
        self.phase = param.phase
        self.xp = xp
        self.dtype = np.dtype(dtype)
        self.blobs: list[Blob] = []
        self.data_paths: DataPaths = DEFAULT  # where the files it names are looked for (its net's)
        for index, proto in enumerate(param.blobs):  # parameters stored inside the prototxt itself
            blob = Blob((), self.dtype, xp)
            try:
                blob.from_proto(proto)
            except ValueError as exc:
                raise self.error(f"blobs[{index}] of the net description: {exc}") from None
            self.blobs.append(blob)
        self.param_propagate_down: list[bool] = []
        self.loss_weights: list[float] = []

    @property
    def name(self) -> str:
        return self.param.name

    # --- the protocol ------------------------------------------------------------------------
    def setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Check blob counts, set up, shape the tops, and set loss weights (Caffe's SetUp)."""
        self.check_blob_counts(bottom, top)
        before = [blob.shape for blob in bottom]
        self.layer_setup(bottom, top)
        self.reshape(bottom, top)
        self.check_in_place(bottom, top, before)
        self.set_loss_weights(top)
        if len(self.param_propagate_down) != len(self.blobs):
            self.param_propagate_down = [True] * len(self.blobs)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Read parameters and create ``self.blobs`` (only when none were loaded)."""

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        raise NotImplementedError(f"{self.type} does not implement reshape")

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        raise NotImplementedError(f"{self.type} does not implement forward")

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        """Default for layers without a gradient: refuse only if one is actually wanted."""
        if any(propagate_down):
            raise BackwardNotImplementedError(f"{self.type} layer '{self.name}' cannot backpropagate")

    def allow_force_backward(self, bottom_index: int) -> bool:
        return True

    # --- loss --------------------------------------------------------------------------------
    def loss(self, top_index: int) -> float:
        return self.loss_weights[top_index] if top_index < len(self.loss_weights) else 0.0

    def set_loss_weights(self, top: list[Blob]) -> None:
        """A top with a nonzero loss_weight counts towards the loss; its diff holds the weight."""
        weights = list(self.param.loss_weight)
        self.loss_weights = [0.0] * len(top)
        if not weights:
            return
        if len(weights) != len(top):
            raise self.error("loss_weight must be unspecified or specified once per top blob")
        for i, weight in enumerate(weights):
            if weight != 0:
                self.loss_weights[i] = float(weight)
                top[i].diff[...] = weight

    # --- helpers -----------------------------------------------------------------------------
    def error(self, message: str) -> LayerSetupError:
        return LayerSetupError(f"layer '{self.name}' ({self.type}): {message}")

    def check_blob_counts(self, bottom: list[Blob], top: list[Blob]) -> None:
        def check(what: str, n: int, exact: int, lo: int, hi: int) -> None:
            if exact >= 0 and n != exact:
                raise self.error(f"takes exactly {exact} {what} blob(s), got {n}")
            if lo >= 0 and n < lo:
                raise self.error(f"takes at least {lo} {what} blob(s), got {n}")
            if hi >= 0 and n > hi:
                raise self.error(f"takes at most {hi} {what} blob(s), got {n}")

        check("bottom", len(bottom), self.exact_num_bottom, self.min_bottom, self.max_bottom)
        check("top", len(top), self.exact_num_top, self.min_top, self.max_top)
        if self.equal_num_bottom_top and len(bottom) != len(top):
            raise self.error(f"needs as many tops as bottoms, got {len(bottom)} and {len(top)}")

    def check_in_place(self, bottom: list[Blob], top: list[Blob], before: list[tuple[int, ...]]) -> None:
        """An in-place top must keep its bottom's shape: the layer would read what it overwrites."""
        for i, (b, t) in enumerate(zip(bottom, top)):
            if b is t and t.shape != before[i]:
                raise self.error(
                    f"cannot compute in place: top {i} is bottom {i}, whose shape {shape_string(before[i])} "
                    f"would become {shape_string(t.shape)}; give the top its own name"
                )

    def new_blob(self, shape: Any) -> Blob:
        return Blob(shape, self.dtype, self.xp)

    def to(self, xp: ModuleType) -> None:
        """Move parameters to another array module; internal state is rebuilt by reshape."""
        self.xp = xp
        for blob in self.blobs:
            blob.to(xp)

    def describe_shapes(self, blobs: list[Blob]) -> str:
        return ", ".join(shape_string(b.shape) for b in blobs)


class NeuronLayer(Layer):
    """One bottom, one top of the same shape; may run in place (top is bottom)."""

    exact_num_bottom = 1
    exact_num_top = 1
    family = "neuron"

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        top[0].reshape(bottom[0].shape)


class LossLayer(Layer):
    """Prediction and target in, a scalar loss out; top 0 weighs 1 unless told otherwise.

    A loss layer written without a top still gets one (anonymous, as Caffe's AutoTopBlobs).
    """

    exact_num_bottom = 2
    exact_num_top = 1
    auto_top_blobs = True
    family = "loss"

    def setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        if not self.param.loss_weight:
            self.param.loss_weight.append(1.0)
        super().setup(bottom, top)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        if any(t is b for t in top for b in bottom):
            raise self.error("a loss cannot be computed in place: give its top its own name")
        if bottom[0].num_axes == 0 or bottom[1].num_axes == 0:
            raise self.error(
                f"the data and label need at least one axis; got {self.describe_shapes(bottom[:2])}"
            )
        if bottom[0].shape[0] != bottom[1].shape[0]:
            raise self.error(
                "the data and label should have the same first dimension; got "
                + self.describe_shapes(bottom[:2])
            )
        top[0].reshape(())

    def allow_force_backward(self, bottom_index: int) -> bool:
        return bottom_index != 1  # never a gradient for the labels
