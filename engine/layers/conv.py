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
space. Each is one GEMM per group over the whole batch (see engine.layers.im2col).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from engine.blob import Blob, shape_string
from engine.fillers import get_filler
from engine.layers.base import Layer
from engine.layers.im2col import batch_first, col2im, conv_output_shape, im2col
from engine.layers.registry import register_layer


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

    def output_shape(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

    # --- the convolution view's matrices ------------------------------------------------------
    def weights(self, diff: bool = False) -> Any:
        """The weight as (group, conv_out / group, conv_in / group * prod(kernel))."""
        w = self.blobs[0].diff if diff else self.blobs[0].data
        return w.reshape(self.group, w.shape[0] // self.group, -1)

    def grouped(self, a: Any) -> Any:
        """(num, C, *spatial) -> contiguous (group, C / group, prod(spatial) * num), the columns' order."""
        n, c = a.shape[:2]
        return self.xp.moveaxis(a.reshape(n, c, -1), 0, -1).reshape(self.group, c // self.group, -1)

    def ungrouped(self, m: Any, spatial: tuple[int, ...]) -> Any:
        """(group, C / group, prod(spatial) * num) -> (num, C, *spatial), a view."""
        return batch_first(m.reshape(-1, *spatial, self.num))

    def cols(self, a: Any) -> Any:
        """im2col of a conv input (num, conv_in, *spatial) as (group, conv_in / group * prod(k), P * num)."""
        col = im2col(a, self.kernel, self.pad, self.stride, self.dilation)
        return col.reshape(self.group, -1, math.prod(self.conv_out) * self.num)

    def uncols(self, m: Any) -> Any:
        """col2im of (group, conv_in / group * prod(k), P * num) into (num, conv_in, *spatial)."""
        col = m.reshape(-1, *self.kernel, *self.conv_out, self.num)
        return col2im(col, self.conv_in, self.kernel, self.pad, self.stride, self.dilation)

    def batch(self, blob: Blob, data: bool = True) -> Any:
        """A blob's data (or diff) with its batch axes merged: (num, C, *spatial), a view."""
        a = blob.data if data else blob.diff
        return a.reshape(self.num, *blob.shape[self.channel_axis :])

    def add_bias(self, y: Any) -> None:
        if self.bias_term:
            y += self.blobs[1].data.reshape(-1, *(1,) * self.num_spatial)

    def bias_backward(self, top: Blob) -> None:
        if self.bias_term and self.param_propagate_down[1]:
            dy = self.batch(top, data=False)
            self.blobs[1].diff += dy.reshape(self.num, self.num_output, -1).sum(axis=(0, 2))


@register_layer("Convolution")
class ConvolutionLayer(BaseConvolutionLayer):
    def output_shape(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        for i, k, p, d in zip(spatial, self.kernel, self.pad, self.dilation):
            if i + 2 * p < d * (k - 1) + 1:
                raise self.error(f"kernel extent {d * (k - 1) + 1} exceeds the padded input size {i + 2 * p}")
        return conv_output_shape(spatial, self.kernel, self.pad, self.stride, self.dilation)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        for b, t in zip(bottom, top):
            y = self.batch(t)
            y[...] = self.ungrouped(xp.matmul(self.weights(), self.cols(self.batch(b))), self.conv_out)
            self.add_bias(y)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        xp = self.xp
        for t, down, b in zip(top, propagate_down, bottom):
            self.bias_backward(t)
            if not (down or self.param_propagate_down[0]):
                continue
            dy = self.grouped(self.batch(t, data=False))
            if self.param_propagate_down[0]:
                self.weights(diff=True)[...] += xp.matmul(dy, self.cols(self.batch(b)).transpose(0, 2, 1))
            if down:
                self.batch(b, data=False)[...] = self.uncols(xp.matmul(self.weights().transpose(0, 2, 1), dy))


@register_layer("Deconvolution")
class DeconvolutionLayer(BaseConvolutionLayer):
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
        xp = self.xp
        for b, t in zip(bottom, top):
            y = self.batch(t)
            y[...] = self.uncols(xp.matmul(self.weights().transpose(0, 2, 1), self.grouped(self.batch(b))))
            self.add_bias(y)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        xp = self.xp
        for t, down, b in zip(top, propagate_down, bottom):
            self.bias_backward(t)
            if not (down or self.param_propagate_down[0]):
                continue
            col = self.cols(self.batch(t, data=False))
            if self.param_propagate_down[0]:
                self.weights(diff=True)[...] += xp.matmul(self.grouped(self.batch(b)), col.transpose(0, 2, 1))
            if down:
                self.batch(b, data=False)[...] = self.ungrouped(xp.matmul(self.weights(), col), self.conv_out)
