"""InnerProduct (fully connected): y = x W^T + b over the axes from ``axis`` on, flattened.

Shapes: (d_0, ..., d_{axis-1}, d_axis, ...) -> (d_0, ..., d_{axis-1}, num_output); with M = count up to
axis and K = count from axis, x is read as (M, K). Weight (num_output, K), or (K, num_output) when
``transpose`` is set; bias (num_output,).
Gradients: dW += dy^T x (x^T dy when transposed), db += sum_m dy, dx = dy W (dy W^T when transposed).
"""

from __future__ import annotations

import math
from typing import Any

from engine import backend, parallel
from engine.blob import Blob, shape_string
from engine.fillers import get_filler
from engine.layers import facts
from engine.layers.base import Layer, Shape
from engine.layers.registry import register_layer

BLOCK_BYTES = 4 << 20  # the weight gradient's product made a block of rows of about this size at a time


@register_layer("InnerProduct")
class InnerProductLayer(Layer):
    exact_num_bottom = 1
    exact_num_top = 1
    family = "vision"
    params = ("inner_product_param",)
    template = (
        'inner_product_param { num_output: 64 weight_filler { type: "xavier" } '
        'bias_filler { type: "constant" } }'
    )

    @classmethod
    def learnable_blobs(cls, param: Any) -> list[facts.ParamBlob]:
        return facts.weights_and_bias("inner_product_param", param.inner_product_param.bias_term)

    @classmethod
    def static_problems(cls, param: Any) -> Any:
        return facts.positive("num_output", param.inner_product_param.num_output)

    def param_shapes(self, bottom: list[Blob]) -> list[Shape]:
        p = self.param.inner_product_param
        k = bottom[0].count(bottom[0].canonical_axis_index(p.axis))
        return [(k, p.num_output) if p.transpose else (p.num_output, k)] + [(p.num_output,)] * p.bias_term

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.inner_product_param
        self.workspace = backend.Workspace()
        self.num_output, self.bias_term, self.transpose = p.num_output, p.bias_term, p.transpose
        if self.num_output <= 0:
            raise self.error("num_output must be positive")
        try:
            self.axis = bottom[0].canonical_axis_index(p.axis)
        except ValueError as exc:
            raise self.error(str(exc)) from None
        shapes = self.param_shapes(bottom)
        if self.blobs:
            if len(self.blobs) != len(shapes):
                raise self.error(
                    f"incorrect number of weight blobs: expected {len(shapes)}, got {len(self.blobs)}"
                )
            for what, blob, shape in zip(("weight", "bias"), self.blobs, shapes):
                if blob.count() != math.prod(shape):  # by count: old caffemodels store 4-D legacy shapes
                    raise self.error(
                        f"incorrect {what} shape: expected {shape_string(shape)}, "
                        f"got {shape_string(blob.shape)}"
                    )
        else:
            for shape, filler in zip(shapes, (p.weight_filler, p.bias_filler)):
                self.blobs.append(self.new_blob(shape))
                get_filler(filler).fill(self.blobs[-1])

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        try:
            axis = bottom[0].canonical_axis_index(self.param.inner_product_param.axis)
        except ValueError as exc:
            raise self.error(str(exc)) from None
        k = self.blobs[0].count() // self.num_output
        if bottom[0].count(axis) != k:
            raise self.error(
                f"input size incompatible with inner product parameters: {k} inputs expected "
                f"from axis {axis} of {shape_string(bottom[0].shape)}"
            )
        self.axis, self.m, self.k = axis, bottom[0].count(0, axis), k
        top[0].reshape((*bottom[0].shape[:axis], self.num_output))

    def weight(self, diff: bool = False) -> Any:
        """The weight as (num_output, K), a view (transposed when stored as (K, num_output))."""
        blob = self.blobs[0]
        w = blob.diff if diff else blob.data
        return w.reshape(self.k, self.num_output).T if self.transpose else w.reshape(self.num_output, self.k)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp, y = self.xp, top[0].data.reshape(self.m, self.num_output)
        # y^T = W x^T (OpenBLAS runs it a quarter faster than x W^T for a batch of 64), turned
        # back in the pass that adds the bias.
        yt = self.workspace.get("yt", (self.num_output, self.m), self.dtype, xp)
        parallel.matmul(self.weight(), bottom[0].data.reshape(self.m, self.k).T, yt, "rows")
        if self.bias_term:
            xp.add(yt.T, self.blobs[1].data.reshape(1, -1), out=y)
        else:
            y[...] = yt.T

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        xp = self.xp
        dy = top[0].diff.reshape(self.m, self.num_output)
        x = bottom[0].data.reshape(self.m, self.k)

        def weights() -> None:
            dw = self.weight(diff=True)
            rows = max(1, BLOCK_BYTES // (dw.shape[1] * dw.itemsize))
            if rows >= dw.shape[0] or not dw.flags.c_contiguous:
                dw += parallel.matmul(dy.T, x, self.workspace.get("dw", dw.shape, self.dtype, xp), "rows")
                return
            # A large weight's gradient a block of rows at a time, each block's product added while
            # still in cache: a whole one (CaffeNet's fc6: 151 MB) is too large for the workspace to
            # keep, and a fresh one each step cost ten times its GEMM in page faults.
            block = self.workspace.get("dw_block", (rows, dw.shape[1]), self.dtype, xp)
            for start in range(0, dw.shape[0], rows):
                part = block[: min(rows, dw.shape[0] - start)]
                dw[start : start + len(part)] += xp.matmul(dy[:, start : start + len(part)].T, x, out=part)

        def data() -> None:
            parallel.matmul(dy, self.weight(), bottom[0].diff.reshape(self.m, self.k), "cols")

        if self.bias_term and self.param_propagate_down[1]:
            self.blobs[1].diff += dy.sum(axis=0).reshape(self.blobs[1].shape)
        # The two GEMMs share only inputs: on the CPU they run side by side.
        parallel.together(
            weights if self.param_propagate_down[0] else None,
            data if propagate_down[0] else None,
            work=dy.size * self.k,
        )
