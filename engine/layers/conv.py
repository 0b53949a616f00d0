"""Convolution and Deconvolution, on Caffe's BaseConvolutionLayer.

Shapes (axis = 1 by default; axes before it are batch axes, the rest spatial, 1-D, 2-D or N-D):
  Convolution:   (N, C, *in) -> (N, num_output, *out), out = floor((in + 2 pad - extent) / stride) + 1,
                 extent = dilation (k - 1) + 1; weight (num_output, C / group, *kernel), bias (num_output,).
  Deconvolution: (N, C, *in) -> (N, num_output, *out), out = stride (in - 1) + extent - 2 pad;
                 weight (C, num_output / group, *kernel).
Both are written in the "convolution view": a convolution from a conv input with conv_in channels to a
conv output with conv_out channels, weight (conv_out, conv_in / group, *kernel). Convolution runs it
forward (y = W cols(x)); Deconvolution's forward is its backward-data pass (y = col2im(W^T x)).
Gradients: dW += dy_conv cols(x_conv)^T, dx_conv = col2im(W^T dy_conv), db += sum of dy over batch and
space. Each is one (batched) GEMM over the whole batch (see engine.layers.im2col for the two column
layouts); Convolution keeps the forward's columns for the weight gradient when they are small enough to
keep (a backward that follows a forward on the same bottom array, as in training, computes them once).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from engine import backend, kernels
from engine.blob import Blob, shape_string
from engine.fillers import get_filler
from engine.layers.base import Layer
from engine.layers.im2col import (
    batch_first,
    col2im,
    col2im_images,
    conv_output_shape,
    im2col,
    im2col_images,
    padded_shape,
)
from engine.layers.registry import register_layer

# Outputs per image from which per-image columns beat batch-inner ones on the CPU (measured on LeNet:
# 576 outputs favour per image by 3x, 64 favour batch-inner by 1.4x).
PER_IMAGE_MIN_OUTPUTS = 256


def spatial_geometry(layer: Layer, num_spatial: int) -> tuple[tuple[int, ...], ...]:
    """(kernel, stride, pad, dilation) per spatial axis, read from ``convolution_param`` as Caffe does."""
    p = layer.param.convolution_param

    def per_axis(name: str, values: Any, default: int | None, hw: str | None = None) -> tuple[int, ...]:
        if hw and (p.HasField(f"{hw}_h") or p.HasField(f"{hw}_w")):
            if num_spatial != 2:
                raise layer.error(f"{hw}_h & {hw}_w can only be used for 2D convolution")
            if len(values):
                raise layer.error(f"either {name} or {hw}_h/w should be specified; not both")
            return (getattr(p, f"{hw}_h"), getattr(p, f"{hw}_w"))
        if len(values) not in {1, num_spatial} and not (default is not None and len(values) == 0):
            raise layer.error(
                f"{name} must be specified once, or once per spatial dimension "
                f"({name} specified {len(values)} times; {num_spatial} spatial dims)"
            )
        if not len(values):
            return (default or 0,) * num_spatial
        return tuple(int(values[0 if len(values) == 1 else i]) for i in range(num_spatial))

    kernel = per_axis("kernel_size", p.kernel_size, None, "kernel")
    stride = per_axis("stride", p.stride, 1, "stride")
    pad = per_axis("pad", p.pad, 0, "pad")
    dilation = per_axis("dilation", p.dilation, 1)
    if any(k <= 0 for k in kernel):
        raise layer.error(f"filter dimensions must be nonzero, got kernel {kernel}")
    if any(s <= 0 for s in stride):
        raise layer.error(f"stride dimensions must be nonzero, got stride {stride}")
    if any(d <= 0 for d in dilation):
        raise layer.error(f"dilation dimensions must be nonzero, got dilation {dilation}")
    return kernel, stride, pad, dilation


class BaseConvolutionLayer(Layer):
    min_bottom = 1
    min_top = 1
    equal_num_bottom_top = True
    reverse_dimensions: ClassVar[bool] = False  # True for Deconvolution

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.convolution_param
        self.workspace = backend.Workspace()
        try:
            self.channel_axis = bottom[0].canonical_axis_index(p.axis)
        except ValueError as exc:
            raise self.error(str(exc)) from None
        self.num_spatial = bottom[0].num_axes - self.channel_axis - 1
        self.kernel, self.stride, self.pad, self.dilation = spatial_geometry(self, self.num_spatial)
        self.channels = bottom[0].shape[self.channel_axis]
        self.num_output, self.group, self.bias_term = p.num_output, p.group, p.bias_term
        if self.num_output <= 0:
            raise self.error("num_output must be positive")
        if self.group <= 0 or self.channels % self.group:
            raise self.error(f"the {self.channels} input channels are not a multiple of group {self.group}")
        if self.num_output % self.group:
            raise self.error(f"num_output {self.num_output} should be a multiple of group {self.group}")
        conv_out, conv_in = (
            (self.channels, self.num_output) if self.reverse_dimensions else (self.num_output, self.channels)
        )
        shapes = [(conv_out, conv_in // self.group, *self.kernel)] + [(self.num_output,)] * self.bias_term
        if self.blobs:
            if len(self.blobs) != len(shapes):
                raise self.error(
                    f"incorrect number of weight blobs: expected {len(shapes)}, got {len(self.blobs)}"
                )
            for what, blob, shape in zip(("weight", "bias"), self.blobs, shapes):
                if blob.shape != shape:
                    raise self.error(
                        f"incorrect {what} shape: expected shape {shape_string(shape)}; "
                        f"instead, shape was {shape_string(blob.shape)}"
                    )
        else:
            fillers = (p.weight_filler, p.bias_filler)
            for shape, filler in zip(shapes, fillers):
                self.blobs.append(self.new_blob(shape))
                get_filler(filler).fill(self.blobs[-1])

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        axis = self.channel_axis
        if bottom[0].num_axes != axis + 1 + self.num_spatial:
            raise self.error(
                f"bottom num_axes may not change: set up for {axis + 1 + self.num_spatial} axes, "
                f"got {shape_string(bottom[0].shape)}"
            )
        if bottom[0].shape[axis] != self.channels:
            raise self.error(
                f"input size incompatible with convolution kernel: {self.channels} channels expected, "
                f"got {shape_string(bottom[0].shape)}"
            )
        for blob in bottom[1:]:
            if blob.shape != bottom[0].shape:
                raise self.error(f"all inputs must have the same shape, got {self.describe_shapes(bottom)}")
        self.num = bottom[0].count(0, axis)
        in_spatial = bottom[0].shape[axis + 1 :]
        out_spatial = self.output_shape(in_spatial)
        for blob in top:
            blob.reshape((*bottom[0].shape[:axis], self.num_output, *out_spatial))
        # The convolution view: conv input -> conv output, whichever of bottom/top they are.
        self.conv_in, self.conv_out = (
            (out_spatial, in_spatial) if self.reverse_dimensions else (in_spatial, out_spatial)
        )
        self.choose_layout(bottom[0])

    def output_shape(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

    # --- the convolution view's matrices ------------------------------------------------------
    # Columns come in one of two layouts (see engine.layers.im2col): per image (N, G, CK, P), whose
    # GEMM writes the conv output (N, C_out, *out) in place, or batch-inner (G, CK, P * N), one GEMM
    # over long rows with the batch transposed in and out. Per image wins for large outputs and on
    # the GPU; batch-inner for the small outputs of deep layers on the CPU. CK = C_in / G * prod(kernel).
    def choose_layout(self, bottom: Blob) -> None:
        """Decide the column layout for this shape, and drop what the last forward kept."""
        outputs = math.prod(self.conv_out)
        self.per_image = outputs >= PER_IMAGE_MIN_OUTPUTS or kernels.enabled(bottom.data)
        self.kept_cols: dict[int, tuple[Any, Any]] = {}

    def weights(self, diff: bool = False) -> Any:
        """The weight as (group, conv_out / group, conv_in / group * prod(kernel))."""
        w = self.blobs[0].diff if diff else self.blobs[0].data
        return w.reshape(self.group, w.shape[0] // self.group, -1)

    def batch(self, blob: Blob, data: bool = True) -> Any:
        """A blob's data (or diff) with its batch axes merged: (num, C, *spatial), a view."""
        a = blob.data if data else blob.diff
        return a.reshape(self.num, *blob.shape[self.channel_axis :])

    def matrix(self, a: Any) -> Any:
        """A conv output (num, C_out, *out) as the GEMM sees it: per image a view (num, G, C_out/G, P),
        else a copy (G, C_out/G, P * num) with the batch innermost."""
        n, c = a.shape[:2]
        if self.per_image:
            return a.reshape(n, self.group, c // self.group, -1)
        m = self.workspace.get("matrix", (self.group, c // self.group, a[0, 0].size * n), self.dtype, self.xp)
        m.reshape(c, -1, n)[...] = self.xp.moveaxis(a.reshape(n, c, -1), 0, -1)
        return m

    def unmatrix(self, m: Any, out: Any) -> None:
        """Write a batch-inner GEMM result (G, C_out/G, P * num) into out (num, C_out, *out)."""
        batch_first(m.reshape(-1, *self.conv_out, self.num), out)

    def cols(self, a: Any, name: str = "col") -> Any:
        """im2col of a conv input (num, C_in, *in): (num, G, CK, P) per image, else (G, CK, P * num)."""
        n, c = a.shape[:2]
        geometry = (self.kernel, self.pad, self.stride, self.dilation)
        rows = c // self.group * math.prod(self.kernel)
        pixels = math.prod(self.conv_out)
        ws, dtype, xp = self.workspace, self.dtype, self.xp
        if self.per_image:
            col = ws.get(name, (n, self.group, rows, pixels), dtype, xp)
            padded = None
            if any(self.pad):
                padded = ws.get(
                    "padded_images", (n, c, *padded_shape(self.conv_in, self.pad)), dtype, xp, zeros=True
                )
            im2col_images(a, *geometry, out=col.reshape(n, c, *self.kernel, *self.conv_out), padded=padded)
        else:
            col = ws.get(name, (self.group, rows, pixels * n), dtype, xp)
            padded = ws.get("padded", (c, *padded_shape(self.conv_in, self.pad), n), dtype, xp, zeros=True)
            im2col(a, *geometry, out=col.reshape(c, *self.kernel, *self.conv_out, n), padded=padded)
        return col

    def uncols(self, m: Any, out: Any) -> None:
        """col2im of columns (either layout) into out (num, C_in, *in)."""
        geometry = (self.conv_in, self.kernel, self.pad, self.stride, self.dilation)
        c = out.shape[1]
        ws, dtype, xp = self.workspace, self.dtype, self.xp
        if self.per_image:
            padded = None
            if any(self.pad):
                padded = ws.get(
                    "padded_diff", (self.num, c, *padded_shape(self.conv_in, self.pad)), dtype, xp
                )
            col2im_images(
                m.reshape(self.num, c, *self.kernel, *self.conv_out), *geometry, out=out, padded=padded
            )
        else:
            padded = ws.get("padded_diff", (c, *padded_shape(self.conv_in, self.pad), self.num), dtype, xp)
            col2im(m.reshape(c, *self.kernel, *self.conv_out, self.num), *geometry, out=out, padded=padded)

    # --- the three products, in the convolution view ------------------------------------------
    def convolve(self, col: Any, out: Any) -> None:
        """out (num, C_out, *out) = W cols."""
        xp, w = self.xp, self.weights()
        if self.per_image:
            xp.matmul(w, col, out=out.reshape(self.num, self.group, w.shape[1], -1))
        else:
            self.unmatrix(
                xp.matmul(
                    w, col, out=self.workspace.get("product", (*w.shape[:2], col.shape[-1]), self.dtype, xp)
                ),
                out,
            )

    def convolve_transposed(self, m: Any, out: Any) -> None:
        """out (num, C_in, *in) = col2im(W^T m) for m = matrix(dy): the data gradient."""
        xp, wt = self.xp, self.weights().transpose(0, 2, 1)
        dcol = self.workspace.get("dcol", (*m.shape[:-2], wt.shape[1], m.shape[-1]), self.dtype, xp)
        self.uncols(xp.matmul(wt, m, out=dcol), out)

    def weight_gradient(self, m: Any, col: Any) -> None:
        """dW += m cols^T summed over the batch, for m = matrix(dy)."""
        xp, dw = self.xp, self.weights(diff=True)
        if self.per_image:  # one small product per image, then their sum
            per_image = self.workspace.get("dw", (*m.shape[:-1], col.shape[-2]), self.dtype, xp)
            dw += xp.matmul(m, col.swapaxes(-1, -2), out=per_image).sum(axis=0)
        else:  # (CK, C_out/G) = cols dy^T runs faster than its transpose here
            product = self.workspace.get("dw", (self.group, col.shape[1], m.shape[1]), self.dtype, xp)
            dw += xp.matmul(col, m.swapaxes(-1, -2), out=product).swapaxes(-1, -2)

    def add_bias(self, y: Any) -> None:
        if self.bias_term:
            y += self.blobs[1].data.reshape(-1, *(1,) * self.num_spatial)

    def bias_backward(self, top: Blob) -> None:
        if self.bias_term and self.param_propagate_down[1]:
            dy = self.batch(top, data=False)
            self.blobs[1].diff += dy.reshape(self.num, self.num_output, -1).sum(axis=0).sum(axis=-1)


@register_layer("Convolution")
class ConvolutionLayer(BaseConvolutionLayer):
    def output_shape(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        for i, k, p, d in zip(spatial, self.kernel, self.pad, self.dilation):
            if i + 2 * p < d * (k - 1) + 1:
                raise self.error(f"kernel extent {d * (k - 1) + 1} exceeds the padded input size {i + 2 * p}")
        return conv_output_shape(spatial, self.kernel, self.pad, self.stride, self.dilation)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        for i, (b, t) in enumerate(zip(bottom, top)):
            name = f"col{i}"
            col = self.cols(self.batch(b), name)
            # The weight gradient needs these columns again: keep them when the workspace does.
            self.kept_cols[i] = (b.data, col) if self.workspace.kept(name, col) else (None, None)
            y = self.batch(t)
            self.convolve(col, y)
            self.add_bias(y)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        for i, (t, down, b) in enumerate(zip(top, propagate_down, bottom)):
            self.bias_backward(t)
            if not (down or self.param_propagate_down[0]):
                continue
            dy = self.matrix(self.batch(t, data=False))
            if self.param_propagate_down[0]:
                source, col = self.kept_cols.get(i, (None, None))
                if source is not b.data:  # no forward since the last reshape, or a new bottom array
                    col = self.cols(self.batch(b), f"col{i}")
                self.weight_gradient(dy, col)
            if down:
                self.convolve_transposed(dy, self.batch(b, data=False))


@register_layer("Deconvolution")
class DeconvolutionLayer(BaseConvolutionLayer):
    """Convolution's transpose: forward is the convolution view's data gradient, and back again."""

    reverse_dimensions = True

    def output_shape(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        out = tuple(
            s * (i - 1) + d * (k - 1) + 1 - 2 * p
            for i, k, p, s, d in zip(spatial, self.kernel, self.pad, self.stride, self.dilation)
        )
        if any(o <= 0 for o in out):
            raise self.error(f"output size {out} is not positive for input {spatial} (pad too large)")
        return out

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        for b, t in zip(bottom, top):
            y = self.batch(t)
            self.convolve_transposed(self.matrix(self.batch(b)), y)
            self.add_bias(y)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        for t, down, b in zip(top, propagate_down, bottom):
            self.bias_backward(t)
            if not (down or self.param_propagate_down[0]):
                continue
            col = self.cols(self.batch(t, data=False))
            if self.param_propagate_down[0]:
                self.weight_gradient(self.matrix(self.batch(b)), col)
            if down:
                self.convolve(col, self.batch(b, data=False))
