"""Convolution and Deconvolution, on Caffe's BaseConvolutionLayer.

Shapes (axis = 1 by default; axes before it are batch axes, the rest spatial, 1-D, 2-D or N-D):
  Convolution:   (N, C, *in) -> (N, num_output, *out), out = floor((in + 2 pad - extent) / stride) + 1,
                 extent = dilation (k - 1) + 1 (1 where the extent passes the padded input by less than
                 the stride, as C++ division gives; see far_padding); weight (num_output, C / group,
                 *kernel), bias (num_output,).
  Deconvolution: (N, C, *in) -> (N, num_output, *out), out = stride (in - 1) + extent - 2 pad;
                 weight (C, num_output / group, *kernel).
Both are written in the "convolution view": a convolution from a conv input with conv_in channels to a
conv output with conv_out channels, weight (conv_out, conv_in / group, *kernel). Convolution runs it
forward (y = W cols(x)); Deconvolution's forward is its backward-data pass (y = col2im(W^T x)).

The reference path here is Caffe's algorithm, for the whole batch at once: per-image columns
cols(x) (N, G, C_in / G prod(kernel), prod(out)) (engine.layers.im2col; on the GPU a fused kernel),
then y = W cols(x), dW += sum over images of dy cols(x)^T, dx = col2im(W^T dy), db = sum of dy over
batch and space. 2-D convolutions on the CPU take engine.layers.conv_cpu's faster route to the same
numbers (channels-last columns a cache-sized block at a time, threads over images), and in float32
its compiled direct kernels where they are built and faster (engine.layers.conv_direct).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from typing import Any, ClassVar

from engine import backend, parallel
from engine.blob import Blob, as_shape, shape_string
from engine.fillers import get_filler
from engine.layers import conv_cpu, facts
from engine.layers.base import Layer, Shape
from engine.layers.conv_shape import ConvShape
from engine.layers.im2col import col2im_images, conv_output_shape, im2col_images, padded_shape
from engine.layers.registry import register_layer

MAX_KERNEL_OFFSETS = 2**20


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


def check_workspace(layer: Layer, kernel: tuple[int, ...], arrays: dict[str, tuple[int, ...]]) -> None:
    """Refuse, before allocating anything, a geometry whose scratch ``arrays`` would pass the blob size
    limit, or whose kernel has more offsets than a loop over them can visit in reasonable time (Caffe
    loops over them in C++; here each is one strided array operation). ``kernel`` is () for no loop."""
    offsets = math.prod(kernel)
    if offsets > MAX_KERNEL_OFFSETS:
        raise layer.error(
            f"kernel {' x '.join(map(str, kernel))} has {offsets} offsets, more than the "
            f"{MAX_KERNEL_OFFSETS} this engine handles"
        )
    for what, shape in arrays.items():
        try:
            as_shape(shape)
        except ValueError as exc:
            raise layer.error(f"its {what} would be too large: {exc}") from None


def far_padding(
    layer: Layer, spatial: tuple[int, ...], kernel: Any, pad: Any, stride: Any, dilation: Any
) -> tuple[int, ...]:
    """Zeros to add after a convolution's input per spatial axis, so that its windows fit.

    Caffe's output size (in + 2 pad - extent) / stride + 1 divides as C++ does, truncating toward
    zero: an extent beyond the padded input by less than the stride still gives one output, whose
    window reads 0 past the input (Caffe's im2col skips positions outside the image), which is the
    input extended by zeros. An extent beyond it by the stride or more gives no output: an error.
    """
    far = []
    for i, k, p, s, d in zip(spatial, kernel, pad, stride, dilation):
        short = d * (k - 1) + 1 - (i + 2 * p)
        if short >= s:
            raise layer.error(
                f"kernel extent {d * (k - 1) + 1} exceeds the padded input size {i + 2 * p} by the "
                f"stride {s} or more: no output"
            )
        far.append(max(0, short))
    return tuple(far)


def convolution_problems(param: Any, num_output: bool = True) -> Iterator[str]:
    """What set-up refuses in a convolution_param without seeing a blob (Im2col has no num_output)."""
    p = param.convolution_param
    if num_output:
        yield from facts.positive("num_output", p.num_output)
    yield from facts.positive("kernel_size", list(p.kernel_size))
    yield from facts.positive("stride", list(p.stride))
    yield from facts.positive("dilation", list(p.dilation))
    for name in ("kernel_h", "kernel_w", "stride_h", "stride_w"):
        if p.HasField(name):
            yield from facts.positive(name, getattr(p, name))
    if p.group <= 0:
        yield f"group must be positive (got {p.group})"
    elif num_output and p.num_output % p.group:
        yield f"num_output {p.num_output} must be a multiple of group {p.group}"
    if p.kernel_size and (p.HasField("kernel_h") or p.HasField("kernel_w")):
        yield "give kernel_size or kernel_h and kernel_w, not both"


class BaseConvolutionLayer(Layer):
    min_bottom = 1
    min_top = 1
    equal_num_bottom_top = True
    reverse_dimensions: ClassVar[bool] = False  # True for Deconvolution
    family = "vision"
    params = ("convolution_param",)
    template = (
        'convolution_param { num_output: 32 kernel_size: 3 weight_filler { type: "xavier" } '
        'bias_filler { type: "constant" } }'
    )

    @classmethod
    def learnable_blobs(cls, param: Any) -> list[facts.ParamBlob]:
        return facts.weights_and_bias("convolution_param", param.convolution_param.bias_term)

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        return convolution_problems(param)

    def param_shapes(self, bottom: list[Blob]) -> list[Shape] | None:
        p = self.param.convolution_param
        axis = bottom[0].canonical_axis_index(p.axis)
        kernel = spatial_geometry(self, bottom[0].num_axes - axis - 1)[0]
        channels = bottom[0].shape[axis]
        out, inp = (channels, p.num_output) if self.reverse_dimensions else (p.num_output, channels)
        if p.group <= 0 or inp % p.group:
            return None
        return [(out, inp // p.group, *kernel)] + [(p.num_output,)] * p.bias_term

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.convolution_param
        self.workspace = backend.Workspace()
        try:
            self.channel_axis = bottom[0].canonical_axis_index(p.axis)
        except ValueError as exc:
            raise self.error(str(exc)) from None
        self.num_spatial = bottom[0].num_axes - self.channel_axis - 1
        self.kernel, self.stride, self.pad, self.dilation = spatial_geometry(self, self.num_spatial)
        check_workspace(self, self.kernel, {})  # before a filler fills a weight of that kernel
        self.channels = bottom[0].shape[self.channel_axis]
        self.num_output, self.group, self.bias_term = p.num_output, p.group, p.bias_term
        if self.num_output <= 0:
            raise self.error("num_output must be positive")
        if self.group <= 0 or self.channels % self.group:
            raise self.error(f"the {self.channels} input channels are not a multiple of group {self.group}")
        if self.num_output % self.group:
            raise self.error(f"num_output {self.num_output} should be a multiple of group {self.group}")
        shapes = self.param_shapes(bottom)
        assert shapes is not None  # the group checks above
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
        far = self.far_padding(in_spatial)
        self.extended = any(far)
        in_view = tuple(i + f for i, f in zip(in_spatial, far))
        # The convolution view: conv input -> conv output, whichever of bottom/top they are.
        self.conv_in, self.conv_out = (
            (out_spatial, in_spatial) if self.reverse_dimensions else (in_view, out_spatial)
        )
        # The padded copy of the conv input outgrows the blob limit only with an absurd pad. (The
        # columns are not checked: a large batch of a real net may need more, memory permitting.)
        conv_channels = self.num_output if self.reverse_dimensions else self.channels
        padded = (conv_channels, *padded_shape(self.conv_in, self.pad), self.num)
        check_workspace(self, (), {"padded input": padded})
        cpu: conv_cpu.CpuConv | None = None
        if conv_cpu.applies(self.xp, self.num_spatial, conv_channels, self.group):
            conv_out_channels = self.channels if self.reverse_dimensions else self.num_output
            geometry = (self.kernel, self.stride, self.pad, self.dilation, self.conv_in, self.conv_out)
            arguments = ConvShape(conv_channels, conv_out_channels, self.group, *geometry)
            # Reshape runs before every forward: the same geometry keeps its CpuConv, and with it
            # the workspace of per-thread partial sums (a new one each step faulted in ~40 MB of
            # fresh pages a step on the ResNet-18-style net's 512-channel layers).
            old = getattr(self, "cpu", None)
            cpu = old if old is not None and old.arguments == arguments else conv_cpu.CpuConv(arguments)
        self.cpu = cpu

    def output_shape(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

    def far_padding(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        """Zeros to add after the input on each spatial axis so that the last window fits (Convolution)."""
        return (0,) * len(spatial)

    def batch(self, blob: Blob, data: bool = True) -> Any:
        """A blob's data (or diff) with its batch axes merged: (num, C, *spatial), a view."""
        a = blob.data if data else blob.diff
        return a.reshape(self.num, *blob.shape[self.channel_axis :])

    def bias(self) -> Any:
        return self.blobs[1].data if self.bias_term else None

    # --- the three products, in the convolution view -------------------------------------------
    def convolve(self, x: Any, y: Any, bias: Any = None) -> None:
        """y (num, C_out, *out) = W cols(x) (+ bias) for x (num, C_in, *in)."""
        if self.cpu is not None:
            self.cpu.forward(x, self.blobs[0].data, y, bias)
            return
        w = self.weights()
        col = self.cols(x)
        parallel.matmul(w, col, y.reshape(self.num, self.group, w.shape[1], -1), "batch")
        if bias is not None:
            y += bias.reshape(-1, *(1,) * self.num_spatial)

    def convolve_transposed(self, dy: Any, dx: Any) -> None:
        """dx (num, C_in, *in) = col2im(W^T dy) for dy (num, C_out, *out): the data gradient."""
        if self.cpu is not None:
            self.cpu.data_gradient(dy, self.blobs[0].data, dx)
            return
        wt = self.weights().transpose(0, 2, 1)
        m = dy.reshape(self.num, self.group, wt.shape[2], -1)
        dcol = self.workspace.get("dcol", (*m.shape[:2], wt.shape[1], m.shape[-1]), self.dtype, self.xp)
        parallel.matmul(wt, m, dcol, "batch")
        padded = None
        if any(self.pad):
            padded = self.workspace.get(
                "padded_diff", (*dx.shape[:2], *padded_shape(self.conv_in, self.pad)), self.dtype, self.xp
            )
        cols = dcol.reshape(self.num, dx.shape[1], *self.kernel, *self.conv_out)
        col2im_images(
            cols, self.conv_in, self.kernel, self.pad, self.stride, self.dilation, out=dx, padded=padded
        )

    def weight_gradient(self, x: Any, dy: Any) -> None:
        """dW += sum over images of dy cols(x)^T."""
        dw = self.blobs[0].diff
        if self.cpu is not None:
            self.cpu.weight_gradient(x, dy, dw)
            return
        col = self.cols(x)
        m = dy.reshape(self.num, self.group, dw.shape[0] // self.group, -1)
        product = self.workspace.get("dw", (*m.shape[:-1], col.shape[-2]), self.dtype, self.xp)
        total = parallel.matmul(m, col.swapaxes(-1, -2), product, "batch").sum(axis=0)
        dw += total.reshape(dw.shape)

    def weights(self) -> Any:
        """The weight as (group, conv_out / group, conv_in / group * prod(kernel))."""
        w = self.blobs[0].data
        return w.reshape(self.group, w.shape[0] // self.group, -1)

    def cols(self, a: Any) -> Any:
        """Per-image columns (num, G, C_in / G * prod(kernel), prod(out)) of a conv input (num, C_in, *in)."""
        n, c = a.shape[:2]
        ws, dtype, xp = self.workspace, self.dtype, self.xp
        rows = c // self.group * math.prod(self.kernel)
        col = ws.get("col", (n, self.group, rows, math.prod(self.conv_out)), dtype, xp)
        padded = None
        if any(self.pad):
            padded = ws.get("padded", (n, c, *padded_shape(self.conv_in, self.pad)), dtype, xp, zeros=True)
        target = col.reshape(n, c, *self.kernel, *self.conv_out)
        im2col_images(a, self.kernel, self.pad, self.stride, self.dilation, out=target, padded=padded)
        return col

    def bias_backward(self, top: Blob) -> None:
        if self.bias_term and self.param_propagate_down[1]:
            dy = self.batch(top, data=False)
            self.blobs[1].diff += dy.reshape(self.num, self.num_output, -1).sum(axis=0).sum(axis=-1)


@register_layer("Convolution")
class ConvolutionLayer(BaseConvolutionLayer):
    """A kernel extent that exceeds the padded input by less than the stride still gives one output,
    as Caffe's integer division (truncating toward zero) does: its window reads zeros past the input
    (Caffe's im2col skips positions outside the image). Here the input is then extended by zeros on
    the far side (``far_padding``), and the data gradient cropped back."""

    def output_shape(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        far = far_padding(self, spatial, self.kernel, self.pad, self.stride, self.dilation)
        wide = tuple(i + f for i, f in zip(spatial, far))
        return conv_output_shape(wide, self.kernel, self.pad, self.stride, self.dilation)

    def far_padding(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        return far_padding(self, spatial, self.kernel, self.pad, self.stride, self.dilation)

    def conv_input(self, blob: Blob) -> Any:
        """The bottom's data as the conv input: with far padding, copied into a larger zero array."""
        x = self.batch(blob)
        if not self.extended:
            return x
        ws = self.workspace
        wide = ws.get("extended", (*x.shape[:2], *self.conv_in), self.dtype, self.xp, zeros=True)
        wide[(..., *(slice(0, n) for n in x.shape[2:]))] = x  # the zeros after it are never written
        return wide

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        if self.num == 0:  # an empty batch: no columns to make, nothing to write
            return
        for b, t in zip(bottom, top):
            self.convolve(self.conv_input(b), self.batch(t), self.bias())

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if self.num == 0:  # an empty batch adds nothing to the gradients
            return
        for t, down, b in zip(top, propagate_down, bottom):
            dy = self.batch(t, data=False)
            cpu = self.cpu
            if cpu is not None and self.param_propagate_down[0]:  # the bias's sum on the way
                wants_bias = self.bias_term and self.param_propagate_down[1]
                db = self.blobs[1].diff if wants_bias else None
                x, dw = self.conv_input(b), self.blobs[0].diff
                if down and not self.extended and cpu.small_scatter(self.num, dy.itemsize):
                    # a data gradient too small to split: beside the weight gradient, a thread each
                    dx = self.batch(b, data=False)
                    weights = self.blobs[0].data
                    parallel.together(
                        functools.partial(cpu.weight_gradient, x, dy, dw, db),
                        functools.partial(cpu.data_gradient, dy, weights, dx),
                        work=dw.size * dy[0, 0].size * self.num,
                    )
                    continue
                cpu.weight_gradient(x, dy, dw, db)
            else:
                self.bias_backward(t)
                if self.param_propagate_down[0]:
                    self.weight_gradient(self.conv_input(b), dy)
            if not down:
                continue
            dx = self.batch(b, data=False)
            if self.extended:  # the data gradient of the extended input, cropped at the end
                dx = self.workspace.get("extended_diff", (*dx.shape[:2], *self.conv_in), self.dtype, self.xp)
            self.convolve_transposed(dy, dx)
            if self.extended:
                bottom_diff = self.batch(b, data=False)
                bottom_diff[...] = dx[(..., *(slice(0, n) for n in bottom_diff.shape[2:]))]


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
        if self.num == 0:  # an empty batch: nothing to write
            return
        for b, t in zip(bottom, top):
            y = self.batch(t)
            self.convolve_transposed(self.batch(b), y)
            if self.bias_term:
                y += self.blobs[1].data.reshape(-1, *(1,) * self.num_spatial)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if self.num == 0:  # an empty batch adds nothing to the gradients
            return
        for t, down, b in zip(top, propagate_down, bottom):
            self.bias_backward(t)
            top_diff = self.batch(t, data=False)
            if self.param_propagate_down[0]:
                self.weight_gradient(top_diff, self.batch(b))
            if down:
                self.convolve(top_diff, self.batch(b, data=False))
