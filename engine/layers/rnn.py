"""RNN: Caffe's simple recurrent layer, a tanh hidden state and a tanh output.

Parameters, in Caffe's order: W_xh (H, D), b_h (H,), W_xh_static (H, D_static) only with a static
input, W_hh (H, H), W_ho (H, H), b_o (H,). For t = 1..T:

    h_t = tanh(W_hh (cont_t * h_{t-1}) + W_xh x_t + b_h [+ W_xh_static x_static])
    o_t = tanh(W_ho h_t + b_o)

The top is o_1..o_T, (T, N, H); with expose_hidden, h_0 is an extra bottom and h_T an extra top.
See _recurrent.py for the rules shared with LSTM.
"""

from __future__ import annotations

from typing import Any

from engine.layers._recurrent import RecurrentLayer
from engine.layers.registry import register_layer


@register_layer("RNN")
class RNNLayer(RecurrentLayer):
    state_names = ("h",)
    output_name = "o"
    concat_name = "o_concat"
    static_layer_name = "W_xh_x_static"
    blob_names = (
        ("W_xh", "weights"),
        ("b_h", "bias"),
        ("W_xh_static", "static"),
        ("W_hh", "weights"),
        ("W_ho", "weights"),
        ("b_o", "bias"),
    )

    def param_specs(self, input_dim: int, static_dim: int | None) -> list[tuple[str, tuple[int, ...], str]]:
        hidden = self.hidden
        specs = [("W_xh", (hidden, input_dim), "weight"), ("b_h", (hidden,), "bias")]
        if static_dim is not None:
            specs.append(("W_xh_static", (hidden, static_dim), "weight"))
        return [
            *specs,
            ("W_hh", (hidden, hidden), "weight"),
            ("W_ho", (hidden, hidden), "weight"),
            ("b_o", (hidden,), "bias"),
        ]

    def run_forward(self, x: Any, cont: Any, x_static: Any, states: list[Any]) -> tuple[Any, list[Any]]:
        xp, steps, streams, hidden = self.xp, self.num_steps, self.num_streams, self.hidden
        first = 2 + self.static_input  # W_hh, then W_ho and b_o
        w_hh, w_ho, b_o = (blob.data for blob in self.blobs[first:])
        x_term = (x @ self.blobs[0].data.T).reshape(steps, streams, hidden)
        x_term += self.blobs[1].data
        static_term = x_static @ self.blobs[2].data.T if x_static is not None else None
        (h,) = states
        hs = xp.empty((steps, streams, hidden), self.dtype)
        conted = xp.empty((steps, streams, hidden), self.dtype)
        for t in range(steps):
            xp.multiply(h, cont[t].reshape(-1, 1), out=conted[t])
            z = conted[t] @ w_hh.T + x_term[t]
            if static_term is not None:
                z += static_term
            h = hs[t] = xp.tanh(z)
        out = (hs.reshape(steps * streams, hidden) @ w_ho.T).reshape(steps, streams, hidden)
        out += b_o
        xp.tanh(out, out=out)
        self._kept = (x, cont, x_static, conted, hs, out)
        return out, [hs[-1]]

    def run_backward(self, dy: Any) -> tuple[Any, Any]:
        xp, steps, streams, hidden = self.xp, self.num_steps, self.num_streams, self.hidden
        x, cont, x_static, conted, hs, out = self._kept
        first = 2 + (x_static is not None)
        w_hh, w_ho = self.blobs[first].data, self.blobs[first + 1].data
        rows = steps * streams
        d_out = (dy * (1 - out * out)).reshape(rows, hidden)
        dh_out = (d_out @ w_ho).reshape(steps, streams, hidden)
        dz = xp.empty((steps, streams, hidden), self.dtype)
        dh_next = xp.zeros((streams, hidden), self.dtype)
        for t in range(steps - 1, -1, -1):
            dz[t] = (dh_out[t] + dh_next) * (1 - hs[t] * hs[t])
            if t > 0:  # h_0 gets no gradient: it is an input of the unrolled net
                dh_next = (dz[t] @ w_hh) * cont[t].reshape(-1, 1)
        flat = dz.reshape(rows, hidden)
        self.blobs[0].diff += flat.T @ x
        self.blobs[1].diff += flat.sum(axis=0)
        self.blobs[first].diff += flat.T @ conted.reshape(rows, hidden)
        self.blobs[first + 1].diff += d_out.T @ hs.reshape(rows, hidden)
        self.blobs[first + 2].diff += d_out.sum(axis=0)
        dx = flat @ self.blobs[0].data
        if x_static is None:
            return dx, None
        dz_sum = dz.sum(axis=0)  # x_static's term is shared by every timestep
        self.blobs[2].diff += dz_sum.T @ x_static
        return dx, dz_sum @ self.blobs[2].data
