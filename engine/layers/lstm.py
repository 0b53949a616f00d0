"""LSTM: Caffe's long short-term memory layer (the "Learning to Execute" variant, no peepholes).

Parameters, in Caffe's order: W_xc (4H, D), b_c (4H,), W_xc_static (4H, D_static) only with a
static input, W_hc (4H, H); the 4H rows are the gates i, f, o, g. For t = 1..T:

    gate_t = W_hc (cont_t * h_{t-1}) + W_xc x_t + b_c [+ W_xc_static x_static]
    c_t, h_t = LSTMUnit(c_{t-1}, gate_t, cont_t)      (see lstm_unit.py)

The top is h_1..h_T, (T, N, H); with expose_hidden, h_0 and c_0 are extra bottoms and h_T and
c_T extra tops. See _recurrent.py for the rules shared with RNN.
"""

from __future__ import annotations

from typing import Any

from engine.layers._recurrent import RecurrentLayer
from engine.layers.lstm_unit import unit_backward, unit_forward
from engine.layers.registry import register_layer


@register_layer("LSTM")
class LSTMLayer(RecurrentLayer):
    state_names = ("h", "c")
    output_name = "h"
    concat_name = "h_concat"
    static_layer_name = "W_xc_x_static"
    blob_names = (("W_xc", "weights"), ("b_c", "bias"), ("W_xc_static", "static"), ("W_hc", "weights"))

    def param_specs(self, input_dim: int, static_dim: int | None) -> list[tuple[str, tuple[int, ...], str]]:
        gates = 4 * self.hidden
        specs = [("W_xc", (gates, input_dim), "weight"), ("b_c", (gates,), "bias")]
        if static_dim is not None:
            specs.append(("W_xc_static", (gates, static_dim), "weight"))
        return [*specs, ("W_hc", (gates, self.hidden), "weight")]

    def run_forward(self, x: Any, cont: Any, x_static: Any, states: list[Any]) -> tuple[Any, list[Any]]:
        xp, steps, streams, gates = self.xp, self.num_steps, self.num_streams, 4 * self.hidden
        w_xc, b_c = self.blobs[0].data, self.blobs[1].data
        w_hc = self.blobs[-1].data
        x_term = (x @ w_xc.T).reshape(steps, streams, gates)
        x_term += b_c
        static_term = x_static @ self.blobs[2].data.T if x_static is not None else None
        h, c = states
        outputs = xp.empty((steps, streams, self.hidden), self.dtype)
        conted, units = [], []
        for t in range(steps):
            h_conted = h * cont[t].reshape(-1, 1)
            gate = h_conted @ w_hc.T + x_term[t]
            if static_term is not None:
                gate += static_term
            c, h, unit = unit_forward(xp, c, gate, cont[t])
            outputs[t] = h
            conted.append(h_conted)
            units.append(unit)
        self._kept = (x, cont, x_static, xp.stack(conted), units)
        return outputs, [h, c]

    def run_backward(self, dy: Any) -> tuple[Any, Any]:
        xp, steps, streams, hidden = self.xp, self.num_steps, self.num_streams, self.hidden
        x, cont, x_static, conted, units = self._kept
        w_hc = self.blobs[-1].data
        gate_diff = xp.empty((steps, streams, 4 * hidden), self.dtype)
        # Nothing follows step T: h_T's diff is the output's alone and c_T's is zero, exposed or not.
        dh_next = xp.zeros((streams, hidden), self.dtype)
        dc = xp.zeros((streams, hidden), self.dtype)
        for t in range(steps - 1, -1, -1):
            dc = unit_backward(xp, units[t], dc, dy[t] + dh_next, gate_diff[t])
            if t > 0:  # h_0 gets no gradient: it is an input of the unrolled net
                dh_next = (gate_diff[t] @ w_hc) * cont[t].reshape(-1, 1)
        flat = gate_diff.reshape(steps * streams, 4 * hidden)
        self.blobs[0].diff += flat.T @ x
        self.blobs[1].diff += flat.sum(axis=0)
        self.blobs[-1].diff += flat.T @ conted.reshape(steps * streams, hidden)
        dx = flat @ self.blobs[0].data
        if x_static is None:
            return dx, None
        gate_sum = gate_diff.sum(axis=0)  # x_static's term is shared by every timestep
        self.blobs[2].diff += gate_sum.T @ x_static
        return dx, gate_sum @ self.blobs[2].data
