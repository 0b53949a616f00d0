"""The base of LSTM and RNN: Caffe's RecurrentLayer, run over the T timesteps directly.

Bottoms: x (T, N, ...), cont (T, N), optionally x_static (N, ...), and with
``recurrent_param.expose_hidden`` the initial states (1, N, H) each (h_0, then c_0 for LSTM).
Tops: the output (T, N, H), then with expose_hidden the final states (1, N, H) each.
x is read as (T, N, D) with D = count from axis 2, x_static as (N, D_static).

Caffe unrolls the recurrence into an internal net of InnerProduct, Scale, Eltwise, ... layers; this
computes the same equations vectorised over streams and features, one timestep after another,
with the same parameter blobs in the same order and shapes (so caffemodels load by position), and
the facts of Caffe's construction kept:
- cont_t scales the previous hidden state before the recurrent product: h_{t-1} * cont_t.
- Without expose_hidden the final states of one forward pass are the initial states of the next
  (zeros at first, and kept in buffers that grow as a Blob's capacity does when N changes); cont 0
  at a sequence's first step keeps them out. ``reset()`` zeroes them.
- With expose_hidden the initial states come from the bottoms and the final states go to the tops,
  but, as in Caffe's unrolled net, no gradient flows through them: the exposed tops' diffs are
  ignored and the exposed bottoms' diffs are left untouched.
- No gradient for cont: force_backward skips it, and its diff is never written.
- Backward ignores propagate_down and param_propagate_down, as Caffe's does: it runs the whole
  unrolled net, whose x and x_static share their diffs with the bottoms (and the layers reading them
  set propagate_down) and whose InnerProducts always learn. So the diffs of x and x_static are
  overwritten and every parameter diff accumulates (lr_mult 0 only makes the update 0).
- T is fixed at setup; N may change on reshape.
"""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Any, ClassVar

from engine import backend
from engine.blob import Blob, shape_string
from engine.fillers import get_filler
from engine.layers import facts
from engine.layers.base import Layer

log = logging.getLogger("engine.net")


class RecurrentLayer(Layer):
    """Abstract: subclasses name their states and parameters and run the timesteps."""

    state_names: ClassVar[tuple[str, ...]] = ()  # recurrent states, in the order of exposed blobs
    output_name: ClassVar[str] = ""  # Caffe's name of the output blob inside the unrolled net
    concat_name: ClassVar[str] = ""  # and of the layer that gathers it over the timesteps
    static_layer_name: ClassVar[str] = ""  # and of the layer that transforms x_static
    # Caffe's names of the parameter blobs, in order, each "weights", "bias" or "static" (a weight
    # that exists only with an x_static bottom).
    blob_names: ClassVar[tuple[tuple[str, str], ...]] = ()
    family = "recurrent"
    params = ("recurrent_param",)
    template = (
        'recurrent_param { num_output: 64 weight_filler { type: "xavier" } bias_filler { type: "constant" } }'
    )

    @classmethod
    def bottoms_needed(cls, param: Any) -> int:
        return 2 + (len(cls.state_names) if param.recurrent_param.expose_hidden else 0)

    @classmethod
    def learnable_blobs(cls, param: Any) -> list[facts.ParamBlob]:
        """Every weight matrix draws from weight_filler, every bias from bias_filler."""
        static = len(param.bottom) > cls.bottoms_needed(param)
        found = []
        for name, kind in cls.blob_names:
            if kind == "static" and not static:
                continue
            kind = "bias" if kind == "bias" else "weights"
            path = f"recurrent_param.{'bias' if kind == 'bias' else 'weight'}_filler"
            found.append(facts.ParamBlob(name, path, facts.constant(), kind=kind))
        return found

    def param_specs(self, input_dim: int, static_dim: int | None) -> list[tuple[str, tuple[int, ...], str]]:
        """(name, shape, 'weight' | 'bias') of every parameter blob, in Caffe's order."""
        raise NotImplementedError

    def run_forward(self, x: Any, cont: Any, x_static: Any, states: list[Any]) -> tuple[Any, list[Any]]:
        """Output (T, N, H) and final states from x (T, N, D), cont (T, N), x_static (N, Ds) or None."""
        raise NotImplementedError

    def run_backward(self, dy: Any) -> tuple[Any, Any]:
        """Accumulate every parameter diff; return dE/dx (T*N, D) and dE/dx_static (N, Ds) or None."""
        raise NotImplementedError

    # --- blob counts -------------------------------------------------------------------------
    @property
    def expose_hidden(self) -> bool:
        return bool(self.param.recurrent_param.expose_hidden)

    @property
    def num_exposed(self) -> int:
        return len(self.state_names) if self.expose_hidden else 0

    def check_blob_counts(self, bottom: list[Blob], top: list[Blob]) -> None:
        least = 2 + self.num_exposed
        if not least <= len(bottom) <= least + 1:
            hidden = f" plus {', '.join(self.state_names)} (expose_hidden)" if self.expose_hidden else ""
            raise self.error(
                f"takes x, cont{hidden} and optionally x_static after cont: {least} or {least + 1} "
                f"bottom blobs, got {len(bottom)}"
            )
        if len(top) != 1 + self.num_exposed:
            raise self.error(f"takes exactly {1 + self.num_exposed} top blob(s), got {len(top)}")

    def allow_force_backward(self, bottom_index: int) -> bool:
        return bottom_index != 1  # never a gradient for the sequence indicators

    # --- set-up ------------------------------------------------------------------------------
    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.recurrent_param
        self.hidden = int(p.num_output)
        if self.hidden <= 0:
            raise self.error("num_output must be positive")
        self.static_input = len(bottom) > 2 + self.num_exposed
        self.num_steps = self._check_sequence(bottom)[0]
        if self.static_input and bottom[2].num_axes < 1:
            raise self.error("the static input (bottom[2]) must have at least 1 axis -- (#streams, ...)")
        self.input_dim = bottom[0].count(2)
        self.static_dim = bottom[2].count(1) if self.static_input else None
        specs = self.param_specs(self.input_dim, self.static_dim)
        if self.blobs:
            self._adopt_loaded_blobs(specs)
        else:
            fillers = {"weight": p.weight_filler, "bias": p.bias_filler}
            for _, shape, kind in specs:
                blob = self.new_blob(shape)
                get_filler(fillers[kind]).fill(blob)
                self.blobs.append(blob)
        self.param_names = [name for name, _, _ in specs]
        self._buffers: list[Any] = [self.xp.zeros(0, self.dtype) for _ in self.state_names]
        self._kept: Any = None

    def _adopt_loaded_blobs(self, specs: list[tuple[str, tuple[int, ...], str]]) -> None:
        if len(self.blobs) != len(specs):
            raise self.error(
                f"incorrect number of weight blobs: expected {len(specs)} "
                f"({', '.join(name for name, _, _ in specs)}), got {len(self.blobs)}"
            )
        for index, (blob, (name, shape, _)) in enumerate(zip(self.blobs, specs)):
            if blob.shape == shape:
                continue
            wanted = Blob(shape, self.dtype, self.xp)
            if blob.count() != wanted.count():  # by count: a BlobProto may give legacy 4-D shapes
                raise self.error(
                    f"incorrect shape of {name} (blob {index}): expected {shape_string(shape)}, "
                    f"got {shape_string(blob.shape)}"
                )
            wanted.data[...] = blob.data.reshape(shape)
            self.blobs[index] = wanted

    def _check_sequence(self, bottom: list[Blob]) -> tuple[int, int]:
        x, cont = bottom[0], bottom[1]
        if x.num_axes < 2:
            raise self.error(
                "bottom[0] must have at least 2 axes -- (#timesteps, #streams, ...); "
                f"got {shape_string(x.shape)}"
            )
        steps, streams = x.shape[0], x.shape[1]
        if cont.num_axes != 2 or cont.shape != (steps, streams):
            raise self.error(
                f"bottom[1] (cont) must be T x N = {steps} x {streams}, the first two axes of bottom[0]; "
                f"got {shape_string(cont.shape)}"
            )
        return steps, streams

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        steps, streams = self._check_sequence(bottom)
        if steps != self.num_steps:
            raise self.error(f"input number of timesteps changed: set up with {self.num_steps}, got {steps}")
        if bottom[0].count(2) != self.input_dim:
            raise self.error(
                f"bottom[0] {shape_string(bottom[0].shape)} has {bottom[0].count(2)} features per step, "
                f"the parameters expect {self.input_dim}"
            )
        if self.static_input:
            static = bottom[2]
            if static.num_axes < 1 or static.shape[0] != streams or static.count(1) != self.static_dim:
                raise self.error(
                    f"the static input (bottom[2]) must be N x ... with N = {streams} and "
                    f"{self.static_dim} features; got {shape_string(static.shape)}"
                )
        self.num_streams = streams
        state_shape = (1, streams, self.hidden)
        first = 2 + self.static_input
        for index in range(first, len(bottom)):
            if bottom[index].shape != state_shape:
                raise self.error(
                    f"bottom[{index}] ({self.state_names[index - first]}_0) must match the hidden state "
                    f"input shape {shape_string(state_shape)}; got {shape_string(bottom[index].shape)}"
                )
        top[0].reshape((steps, streams, self.hidden))
        for blob in top[1:]:
            blob.reshape(state_shape)
        count = streams * self.hidden
        for k, buffer in enumerate(self._buffers):
            # Caffe's state blobs keep their memory while they shrink and start from zeros when they
            # outgrow it: the first streams keep their state, a larger batch starts afresh.
            if buffer.size < count:
                self._buffers[k] = self.xp.zeros(count, self.dtype)

    # --- running -----------------------------------------------------------------------------
    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        steps, streams, hidden = self.num_steps, self.num_streams, self.hidden
        count = streams * hidden
        if self.expose_hidden:
            first = 2 + self.static_input
            states = [b.data.reshape(streams, hidden) for b in bottom[first : first + len(self.state_names)]]
        else:
            states = [buffer[:count].reshape(streams, hidden).copy() for buffer in self._buffers]
        x = bottom[0].data.reshape(steps * streams, self.input_dim)
        x_static = bottom[2].data.reshape(streams, -1) if self.static_input else None
        output, final = self.run_forward(x, bottom[1].data.reshape(steps, streams), x_static, states)
        top[0].data[...] = output.reshape(top[0].shape)
        if self.expose_hidden:
            for blob, state in zip(top[1:], final):
                blob.data[...] = state.reshape(blob.shape)
        else:
            for buffer, state in zip(self._buffers, final):
                buffer[:count] = state.reshape(count)
        if self.param.recurrent_param.debug_info:
            self._debug("Forward", [(self.concat_name, "top", self.output_name, top[0].data)])

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        # propagate_down is not consulted (see the module's docstring); cont's diff is left alone.
        dx, dx_static = self.run_backward(top[0].diff.reshape(self.num_steps, self.num_streams, self.hidden))
        bottom[0].diff[...] = dx.reshape(bottom[0].shape)
        if self.static_input:
            bottom[2].diff[...] = dx_static.reshape(bottom[2].shape)
        if self.param.recurrent_param.debug_info:
            diffs = [("x_transform", "bottom", "x", bottom[0].diff)]
            if self.static_input:
                diffs.append((self.static_layer_name, "bottom", "x_static", bottom[2].diff))
            self._debug("Backward", diffs, params=True)

    def reset(self) -> None:
        """Forget the carried state (Caffe's Reset): zero the final states of the current N streams.
        Like Caffe's, it leaves what lies beyond them, which a later larger N that still fits reuses."""
        count = self.num_streams * self.hidden
        for buffer in self._buffers:
            buffer[:count] = 0

    def _debug(self, phase: str, arrays: list[tuple[str, str, str, Any]], params: bool = False) -> None:
        """recurrent_param.debug_info: mean absolute values of the blobs at the unrolled net's edges,
        named as Caffe names them there, in the format of Net's debug_info."""
        kind = "data" if phase == "Forward" else "diff"
        for layer, role, name, array in arrays:
            layer = f"{self.name}_{layer}" if self.name else layer
            mean = float(self.xp.abs(array).sum()) / max(array.size, 1)
            log.info("    [%s] Layer %s, %s blob %s %s: %g", phase, layer, role, name, kind, mean)
        if params:
            for name, blob in zip(self.param_names, self.blobs):
                mean = blob.asum_diff() / max(blob.count(), 1)
                log.info("    [%s] Layer %s, param blob %s diff: %g", phase, self.name, name, mean)

    def to(self, xp: ModuleType) -> None:
        super().to(xp)
        self._buffers = [backend.to_module(buffer, xp) for buffer in self._buffers]
        self._kept = None
