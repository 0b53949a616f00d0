"""LSTMUnit: one timestep of the LSTM non-linearity, the cell that the LSTM layer unrolls.

Bottoms: c_{t-1} (1, N, H), the gate inputs (1, N, 4H) laid out as [i', f', o', g'], and the
continuation indicators cont_t (1, N). Tops: c_t and h_t, both (1, N, H):

    i = sigmoid(i'), f = cont * sigmoid(f') (0 where cont == 0), o = sigmoid(o'), g = tanh(g')
    c_t = f * c_{t-1} + i * g,   h_t = o * tanh(c_t)

The forget gate is clipped by cont, so a new sequence (cont 0) starts from an empty cell.
Gradients, with dc = dE/dc_t + dE/dh_t * o * (1 - tanh(c_t)^2):
    dE/dc_{t-1} = dc * f, dE/di' = dc * g * i (1 - i), dE/df' = dc * c_{t-1} * f (1 - f),
    dE/do' = dE/dh_t * tanh(c_t) * o (1 - o), dE/dg' = dc * i * (1 - g^2).
dE/df' uses the clipped f in both factors, as Caffe's CPU code does; for a binary cont that is the
exact derivative. There is no gradient for cont. Backward writes both bottom diffs when either is
wanted (and none when neither is), as Caffe's does.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, NamedTuple

from engine.blob import Blob, shape_string
from engine.layers.base import Layer
from engine.layers.registry import register_layer


def sigmoid(xp: ModuleType, x: Any) -> Any:
    """1 / (1 + exp(-x)) without overflow for large |x|."""
    out = xp.tanh(x * 0.5)
    out *= 0.5
    out += 0.5
    return out


class UnitState(NamedTuple):
    """What one LSTMUnit step keeps for its backward pass (arrays of shape (N, H))."""

    i: Any
    f: Any  # already clipped by cont
    o: Any
    g: Any
    c_prev: Any
    tanh_c: Any


def unit_forward(xp: ModuleType, c_prev: Any, gates: Any, cont: Any) -> tuple[Any, Any, UnitState]:
    """c_t and h_t from c_{t-1} (N, H), the gate inputs (N, 4H) and cont (N,)."""
    hidden = c_prev.shape[-1]
    acts = sigmoid(xp, gates[:, : 3 * hidden])
    i, f, o = acts[:, :hidden], acts[:, hidden : 2 * hidden], acts[:, 2 * hidden :]
    keep = cont.reshape(-1, 1)
    f = xp.where(keep == 0, xp.zeros((), f.dtype), keep * f)
    g = xp.tanh(gates[:, 3 * hidden :])
    c = f * c_prev + i * g
    tanh_c = xp.tanh(c)
    return c, o * tanh_c, UnitState(i, f, o, g, c_prev, tanh_c)


def unit_backward(xp: ModuleType, state: UnitState, dc: Any, dh: Any, gates_diff: Any) -> Any:
    """Write dE/d(gate inputs) into ``gates_diff`` (N, 4H) and return dE/dc_{t-1} (N, H)."""
    i, f, o, g, c_prev, tanh_c = state
    hidden = i.shape[-1]
    c_term = dc + dh * o * (1 - tanh_c * tanh_c)
    gates_diff[:, :hidden] = c_term * g * i * (1 - i)
    gates_diff[:, hidden : 2 * hidden] = c_term * c_prev * f * (1 - f)
    gates_diff[:, 2 * hidden : 3 * hidden] = dh * tanh_c * o * (1 - o)
    gates_diff[:, 3 * hidden :] = c_term * i * (1 - g * g)
    return c_term * f


@register_layer("LSTMUnit")
class LSTMUnitLayer(Layer):
    exact_num_bottom = 3
    exact_num_top = 2
    family = "recurrent"
    top_names = ("{name}_c", "{name}_h")

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        n = bottom[0].shape[1] if bottom[0].num_axes > 1 else -1
        for index, (blob, axes) in enumerate(zip(bottom, (3, 3, 2))):
            if blob.num_axes != axes or blob.shape[0] != 1 or blob.shape[1] != n:
                raise self.error(
                    f"bottom[{index}] must be 1 x N{' x ...' if axes == 3 else ''} with {axes} axes and the "
                    f"N of bottom[0]; got shapes {self.describe_shapes(bottom)}"
                )
        self.hidden = bottom[0].shape[2]
        if bottom[1].shape[2] != 4 * self.hidden:
            raise self.error(
                f"the gate input (bottom[1], {shape_string(bottom[1].shape)}) must have 4 x "
                f"{self.hidden} channels, four gates per cell of bottom[0]"
            )
        top[0].reshape(bottom[0].shape)
        top[1].reshape(bottom[0].shape)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        n, hidden = bottom[0].shape[1], self.hidden
        c, h, _ = unit_forward(
            self.xp,
            bottom[0].data.reshape(n, hidden),
            bottom[1].data.reshape(n, 4 * hidden),
            bottom[2].data.reshape(n),
        )
        top[0].data[...] = c.reshape(top[0].shape)
        top[1].data[...] = h.reshape(top[1].shape)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[2]:
            raise self.error("cannot backpropagate to the sequence indicators (bottom[2])")
        if not (propagate_down[0] or propagate_down[1]):
            return
        xp, n, hidden = self.xp, bottom[0].shape[1], self.hidden
        # Recomputed from the bottoms rather than kept: backward needs nothing forward must store.
        _, _, state = unit_forward(
            xp,
            bottom[0].data.reshape(n, hidden),
            bottom[1].data.reshape(n, 4 * hidden),
            bottom[2].data.reshape(n),
        )
        gates_diff = xp.empty((n, 4 * hidden), self.dtype)
        dc_prev = unit_backward(
            xp, state, top[0].diff.reshape(n, hidden), top[1].diff.reshape(n, hidden), gates_diff
        )
        # As Caffe's: asked for either, it writes both (c_{t-1}'s and the gate inputs' diffs).
        bottom[0].diff[...] = dc_prev.reshape(bottom[0].shape)
        bottom[1].diff[...] = gates_diff.reshape(bottom[1].shape)

    def allow_force_backward(self, bottom_index: int) -> bool:
        return bottom_index != 2  # never a gradient for the sequence indicators
