"""Eltwise: element-wise PROD, SUM (with optional coefficients) or MAX of two or more bottoms.

Shapes: K >= 2 bottoms of one shape -> top of that shape.
  SUM:  y = sum_k c_k x_k (c_k = 1 unless ``coeff`` gives one per bottom); dE/dx_k = c_k dE/dy.
  PROD: y = prod_k x_k; dE/dx_k = dE/dy * prod_{j != k} x_j (``stable_prod_grad``, the default)
        or dE/dy * y / x_k (faster, but wrong where x_k = 0).
  MAX:  y = max_k x_k; the gradient goes only to the bottom that won. Ties as in Caffe: between
        bottoms 0 and 1 bottom 1 wins; a later bottom must be strictly greater to win.
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import Layer
from engine.layers.registry import register_layer
from proto import caffe_pb2

Op = caffe_pb2.EltwiseParameter


@register_layer("Eltwise")
class EltwiseLayer(Layer):
    min_bottom = 2
    exact_num_top = 1
    family = "structure"
    params = ("eltwise_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.eltwise_param
        if p.coeff and len(p.coeff) != len(bottom):
            raise self.error(
                f"takes one coefficient per bottom blob: {len(p.coeff)} coeffs, {len(bottom)} bottoms"
            )
        if p.operation == Op.PROD and p.coeff:
            raise self.error("only takes coefficients for summation (operation: SUM)")
        self.op = p.operation
        self.coeffs = list(p.coeff) if p.coeff else [1.0] * len(bottom)
        self.stable_prod_grad = p.stable_prod_grad

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        for i, blob in enumerate(bottom[1:], 1):
            if blob.shape != bottom[0].shape:
                raise self.error(
                    f"all bottoms must have the same shape; bottom 0 is {self.describe_shapes(bottom[:1])}, "
                    f"bottom {i} is {self.describe_shapes([blob])}"
                )
        top[0].reshape(bottom[0].shape)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        if (
            self.op == Op.SUM
            and all(c == 1 for c in self.coeffs)
            and all(b is not top[0] for b in bottom[2:])
        ):
            # A plain sum straight into the top: one pass for two bottoms (a top that is bottom 0 or 1
            # is read before written, element by element), then one per further bottom.
            y = top[0].data
            xp.add(bottom[0].data, bottom[1].data, out=y)
            for blob in bottom[2:]:
                y += blob.data
            return
        # Results are built apart and assigned last, so a top that is one of the bottoms still works.
        if self.op == Op.PROD:
            out = bottom[0].data * bottom[1].data
            for blob in bottom[2:]:
                out *= blob.data
        elif self.op == Op.SUM:
            out = bottom[0].data * self.coeffs[0] if self.coeffs[0] != 1 else bottom[0].data.copy()
            for c, blob in zip(self.coeffs[1:], bottom[1:]):
                out += blob.data * c if c != 1 else blob.data
        elif self.op == Op.MAX:
            # Caffe's comparisons, not xp.maximum: bottom 0 wins only when greater, a later bottom only
            # when greater than the running max (so a NaN never wins unless it comes first in 0 vs 1).
            a, b = bottom[0].data, bottom[1].data
            first = a > b
            self.max_idx = xp.logical_not(first).astype(xp.int32)
            out = xp.where(first, a, b)
            for k, blob in enumerate(bottom[2:], 2):
                greater = blob.data > out
                xp.copyto(self.max_idx, k, where=greater)
                xp.copyto(out, blob.data, where=greater)
        else:
            raise self.error(f"unknown operation {self.op}")
        top[0].data[...] = out

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        xp = self.xp
        top_diff = top[0].diff
        if any(blob is top[0] for blob in bottom):  # in place: keep dE/dy before bottom 0 overwrites it
            top_diff = top_diff.copy()
        for k, blob in enumerate(bottom):
            if not propagate_down[k]:
                continue
            if self.op == Op.PROD:
                if self.stable_prod_grad:
                    others = [b.data for j, b in enumerate(bottom) if j != k]
                    grad = others[0].copy()
                    for data in others[1:]:
                        grad *= data
                else:
                    grad = top[0].data / blob.data
                xp.multiply(grad, top_diff, out=blob.diff)
            elif self.op == Op.SUM:
                xp.multiply(top_diff, self.coeffs[k], out=blob.diff)
            else:
                xp.multiply(top_diff, self.max_idx == k, out=blob.diff)
