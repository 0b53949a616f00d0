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
Gradients: dW += dy_conv cols(x_conv)^T, dx_conv = col2im(W^T dy_conv), db += sum of dy over batch and
space. Each is one (batched) GEMM over the whole batch (see engine.layers.im2col for the two column
layouts); Convolution keeps the forward's columns for the weight gradient when they are small enough to
keep (a backward that follows a forward on the same bottom array, as in training, computes them once).
Where the columns are array code's (not the GPU's im2col kernel) and there is one group, Convolution
folds the bias into the GEMMs: the columns get a last row of ones and the weight a last column holding
the bias, so the forward GEMM adds it, and the weight-gradient GEMM's last column is the bias gradient.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from engine import backend, kernels, parallel
from engine.blob import Blob, as_shape, shape_string
from engine.fillers import get_filler
from engine.layers import facts
from engine.layers.base import Layer, Shape
from engine.layers.im2col import (
    batch_first,
    col2im,
    col2im_images,
    col2im_spans,
    conv_output_shape,
    im2col,
    im2col_images,
    im2col_rows,
    inner,
    padded_shape,
    span_length,
    spans_view,
)
from engine.layers.registry import register_layer

# Per-image columns written and multiplied a range of images at a time, while still in a core's cache
# (its L2 holds 2 MiB here): with two threads LeNet's conv1 forward took 0.52 ms instead of 0.77.
CHUNK_BYTES = 1 << 20

# Outputs per image from which per-image columns beat batch-inner ones on the CPU (measured on LeNet:
# 576 outputs favour per image by 3x, 64 favour batch-inner by 1.4x).
PER_IMAGE_MIN_OUTPUTS = 256
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
        self.choose_layout(bottom[0])

    def output_shape(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

    def far_padding(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        """Zeros to add after the input on each spatial axis so that the last window fits (Convolution)."""
        return (0,) * len(spatial)

    # --- the convolution view's matrices ------------------------------------------------------
    # Columns come in one of two layouts (see engine.layers.im2col): per image (N, G, CK, P), whose
    # GEMM writes the conv output (N, C_out, *out) in place, or batch-inner (G, CK, P * N), one GEMM
    # over long rows with the batch transposed in and out. Per image wins for large outputs and on
    # the GPU; batch-inner for the small outputs of deep layers on the CPU. CK = C_in / G * prod(kernel).
    def choose_layout(self, bottom: Blob) -> None:
        """Decide the column layout for this shape, and drop what the last forward kept."""
        outputs = math.prod(self.conv_out)
        on_kernels = kernels.enabled(bottom.data)
        self.per_image = outputs >= PER_IMAGE_MIN_OUTPUTS or on_kernels
        # The bias rides in the GEMMs as a row of ones under the columns (one group: the columns of
        # several groups would need a row each, inside the im2col layout).
        self.fold = self.bias_term and self.group == 1 and not self.reverse_dimensions and not on_kernels
        self.kept_cols: dict[int, tuple[Any, Any]] = {}

    def weights(self, diff: bool = False) -> Any:
        """The weight as (group, conv_out / group, conv_in / group * prod(kernel))."""
        w = self.blobs[0].diff if diff else self.blobs[0].data
        return w.reshape(self.group, w.shape[0] // self.group, -1)

    def folded_weights(self) -> Any:
        """With the bias folded: the weight with the bias as a last column, (1, conv_out, CK + 1)."""
        w = self.weights()
        both = self.workspace.get("weights_bias", (*w.shape[:2], w.shape[2] + 1), self.dtype, self.xp)
        both[..., :-1] = w
        both[..., -1] = self.blobs[1].data.reshape(w.shape[:2])
        return both

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

    def cols(self, a: Any, name: str = "col", images: Callable[[Any, slice], None] | None = None) -> Any:
        """im2col of a conv input (num, C_in, *in): (num, G, CK, P) per image, else (G, CK, P * num);
        with the bias folded, CK + 1 rows, the last all ones. Per image, ``images(columns, range)``,
        if given, runs on each range of images (a slice) right after its columns are written (they
        are still in the core's cache then), the ranges shared among engine.parallel's threads."""
        n, c = a.shape[:2]
        geometry = (self.kernel, self.pad, self.stride, self.dilation)
        rows = c // self.group * math.prod(self.kernel)
        extra = int(self.fold)
        pixels = math.prod(self.conv_out)
        ws, dtype, xp = self.workspace, self.dtype, self.xp
        if self.per_image:
            col = ws.get(name, (n, self.group, rows + extra, pixels), dtype, xp)
            if extra:
                col[..., rows, :] = 1
            padded = None
            if any(self.pad):
                padded = ws.get(
                    "padded_images", (n, c, *padded_shape(self.conv_in, self.pad)), dtype, xp, zeros=True
                )
            # Splitting the axes of a slice is always a view: im2col writes into col itself.
            target = (col[:, 0, :rows] if extra else col).reshape(n, c, *self.kernel, *self.conv_out)
            if images is None:
                im2col_images(a, *geometry, out=target, padded=padded)
                return col
            per = max(1, CHUNK_BYTES // col[0].nbytes)

            def chunks(first: int, stop: int) -> None:
                for start in range(first * per, min(stop * per, n), per):
                    part = slice(start, min(start + per, n))
                    im2col_images(
                        a[part], *geometry, out=target[part], padded=None if padded is None else padded[part]
                    )
                    images(col[part], part)

            parallel.run(chunks, -(-n // per), xp)
            return col
        else:
            col = ws.get(name, (self.group, rows + extra, pixels * n), dtype, xp)
            padded = ws.get("padded", (c, *padded_shape(self.conv_in, self.pad), n), dtype, xp, zeros=True)
            target = (col[0, :rows] if extra else col).reshape(c, *self.kernel, *self.conv_out, n)
            im2col(a, *geometry, out=target, padded=padded)
        if extra:
            col[..., rows, :] = 1
        return col

    def pipelined(self, x: Any) -> bool:
        """Whether the batch-inner forward runs as ranges of output rows on the pool's threads (each
        range's columns, GEMM and transpose back while its columns are in the core's cache)."""
        return (
            not self.per_image
            and parallel.splitting()
            and self.num_spatial > 0
            and self.conv_out[0] > 1
            and self.num_output * x[0:1].size * self.num * math.prod(self.kernel) // self.group
            >= parallel.MIN_SPLIT_TASKS
        )

    def cols_convolve_rows(self, a: Any, y: Any, name: str) -> Any:
        """``cols`` then ``convolve`` for batch-inner columns, as ranges of output rows (first spatial
        axis) shared among engine.parallel's threads. Every value is that of the whole-batch path:
        the same copies, and each GEMM column sums the whole inner dimension."""
        n, c = a.shape[:2]
        rows = c // self.group * math.prod(self.kernel)
        extra = int(self.fold)
        pixels = math.prod(self.conv_out)
        ws, dtype, xp = self.workspace, self.dtype, self.xp
        col = ws.get(name, (self.group, rows + extra, pixels * n), dtype, xp)
        padded = ws.get("padded", (c, *padded_shape(self.conv_in, self.pad), n), dtype, xp, zeros=True)
        target = (col[0, :rows] if extra else col).reshape(c, *self.kernel, *self.conv_out, n)
        if extra:
            col[..., rows, :] = 1
        padded[inner(self.pad, self.conv_in)] = xp.moveaxis(a, 0, -1)
        w = self.folded_weights() if self.fold else self.weights()
        product = ws.get("product", (*w.shape[:2], col.shape[-1]), dtype, xp)
        per_row = pixels // self.conv_out[0] * n  # columns of one output row
        m = product.reshape(-1, self.conv_out[0], per_row)

        def share(start: int, end: int) -> None:  # one range per thread (smaller ones ran slower)
            im2col_rows(padded, self.stride, self.dilation, target, start, end)
            span = slice(start * per_row, end * per_row)
            xp.matmul(w, col[..., span], out=product[..., span])
            batch_first(m[:, start:end].reshape(-1, end - start, *self.conv_out[1:], n), y[:, :, start:end])

        parallel.run(share, self.conv_out[0], xp)
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
    def convolve(self, col: Any, out: Any, w: Any = None) -> None:
        """out (num, C_out, *out) = W cols (+ the bias, when folded into both); ``w``: that weight,
        when the caller has it already."""
        xp = self.xp
        if w is None:
            w = self.folded_weights() if self.fold else self.weights()
        if self.per_image:
            parallel.matmul(w, col, out.reshape(out.shape[0], self.group, w.shape[1], -1), "batch")
        else:
            product = self.workspace.get("product", (*w.shape[:2], col.shape[-1]), self.dtype, xp)
            self.unmatrix(parallel.matmul(w, col, product, "cols"), out)

    def convolve_images(self, w: Any, out: Any, col: Any, images: slice) -> None:
        """``convolve`` for a range of images: their columns into their outputs."""
        self.convolve(col, out[images], w)

    def convolve_transposed(self, m: Any, out: Any, part: tuple[int, int] = (0, 1)) -> None:
        """out (num, C_in, *in) = col2im(W^T m) for m = matrix(dy): the data gradient. ``part`` (i, n):
        only the i-th of n ranges of input channels (span columns and one group only)."""
        xp, wt = self.xp, self.weights().transpose(0, 2, 1)
        if self.spans():
            self.convolve_transposed_spans(wt, m, out, part)
            return
        dcol = self.workspace.get("dcol", (*m.shape[:-2], wt.shape[1], m.shape[-1]), self.dtype, xp)
        self.uncols(parallel.matmul(wt, m, dcol, "batch" if self.per_image else "cols"), out)

    def spans(self) -> bool:
        """Whether the data gradient goes through span columns (batch-inner, stride 1, some spatial
        axis: spans run along the last one)."""
        return not self.per_image and self.num_spatial > 0 and all(s == 1 for s in self.stride)

    def spans_scratch(self, channels: int) -> tuple[Any, Any]:
        """The span columns (zero gaps) and the padded image they are added into."""
        ws, full = self.workspace, padded_shape(self.conv_in, self.pad)
        length = span_length(self.conv_out, full, self.num)
        spans = ws.get("spans", (channels * math.prod(self.kernel), length), self.dtype, self.xp, zeros=True)
        return spans, ws.get("padded_diff", (channels, *full, self.num), self.dtype, self.xp)

    def convolve_transposed_spans(self, wt: Any, m: Any, out: Any, part: tuple[int, int]) -> None:
        """The batch-inner data gradient for stride 1: the GEMM writes span columns, one output row
        at a time, and col2im adds each kernel offset's columns as one run (engine.layers.im2col)."""
        xp, n, c = self.xp, self.num, out.shape[1]
        full = padded_shape(self.conv_in, self.pad)
        spans, padded = self.spans_scratch(c)
        length, taps = spans.shape[-1], math.prod(self.kernel)
        first, last = c * part[0] // part[1], c * (part[0] + 1) // part[1]
        if first == last:
            return
        if part[1] > 1:  # a range of input channels: its rows of W^T, of the spans, of the image
            wt, spans = wt[:, first * taps : last * taps], spans[first * taps : last * taps]
            out, padded = out[:, first:last], padded[first:last]
        # (G, C_out/G, *out, N) -> (*out[:-1], G, C_out/G, out[-1] * N), matching spans_view's axes
        rows = m.reshape(*m.shape[:2], *self.conv_out[:-1], -1)
        rows = xp.moveaxis(rows, (0, 1), (-3, -2))
        parallel.matmul(wt, rows, spans_view(spans, self.group, self.conv_out, full, n), "cols")
        col2im_spans(
            spans.reshape(-1, *self.kernel, length),
            self.conv_in,
            self.kernel,
            self.pad,
            self.dilation,
            out,
            padded,
        )

    def product_scratch(self, m: Any, col: Any) -> Any:
        """The weight-gradient GEMM's result: per image (num, G, C_out/G, CK), else (G, CK, C_out/G)."""
        if self.per_image:
            return self.workspace.get("dw", (*m.shape[:-1], col.shape[-2]), self.dtype, self.xp)
        return self.workspace.get("dw", (self.group, col.shape[1], m.shape[1]), self.dtype, self.xp)

    def weight_gradient(self, m: Any, col: Any, part: tuple[int, int] = (0, 1)) -> None:
        """dW += m cols^T summed over the batch, for m = matrix(dy); with the bias folded into the
        columns, the product's last column is the bias gradient. ``part`` (i, n): only the i-th of n
        ranges of column rows (batch-inner only)."""
        dw, product = self.weights(diff=True), self.product_scratch(m, col)
        rows = col.shape[-2]
        first, last = rows * part[0] // part[1], rows * (part[0] + 1) // part[1]
        if first == last:
            return
        if self.per_image:  # one small product per image, then their sum
            total = parallel.matmul(m, col.swapaxes(-1, -2), product, "batch").sum(axis=0)
        else:  # (CK, C_out/G) = cols dy^T runs faster than its transpose here
            span = slice(first, last)
            total = parallel.matmul(col[:, span], m.swapaxes(-1, -2), product[:, span], "rows").swapaxes(
                -1, -2
            )
        weights = dw.shape[-1]
        if first < weights:
            dw[..., first : min(last, weights)] += total[..., : min(last, weights) - first]
        if self.fold and last > weights and self.param_propagate_down[1]:
            self.blobs[1].diff += total[..., -1].reshape(-1)

    def add_bias(self, y: Any) -> None:
        if self.bias_term:
            y += self.blobs[1].data.reshape(-1, *(1,) * self.num_spatial)

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
        for i, (b, t) in enumerate(zip(bottom, top)):
            name, y = f"col{i}", self.batch(t)
            x = self.conv_input(b)
            if self.per_image and parallel.splitting():  # each range's GEMM right after its columns
                w = self.folded_weights() if self.fold else self.weights()  # once, not per thread
                col = self.cols(x, name, functools.partial(self.convolve_images, w, y))
            elif self.pipelined(x):
                col = self.cols_convolve_rows(x, y, name)
            else:
                col = self.cols(x, name)
                self.convolve(col, y)
            # The weight gradient needs these columns again: keep them when the workspace does.
            self.kept_cols[i] = (b.data, col) if self.workspace.kept(name, col) else (None, None)
            if not self.fold:
                self.add_bias(y)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if self.num == 0:  # an empty batch adds nothing to the gradients
            return
        for i, (t, down, b) in enumerate(zip(top, propagate_down, bottom)):
            if not (self.fold and self.param_propagate_down[0]):  # else the weight GEMM does it
                self.bias_backward(t)
            if not (down or self.param_propagate_down[0]):
                continue
            dy, dx = self.matrix(self.batch(t, data=False)), self.batch(b, data=False)
            if self.extended:  # the data gradient of the extended input, cropped at the end
                dx = self.workspace.get("extended_diff", (*dx.shape[:2], *self.conv_in), self.dtype, self.xp)
            learn = self.param_propagate_down[0]
            if learn:
                source, col = self.kept_cols.get(i, (None, None))
                if source is not b.data:  # no forward since the last reshape, or a new bottom array
                    col = self.cols(self.conv_input(b), f"col{i}")
            # The weight and data gradients share only inputs: on the CPU they run side by side, and
            # with span columns (one group) each splits into ranges of rows / input channels, a
            # share of both per thread. Scratch arrays are made first, not by racing threads.
            work = dy.size * (col.shape[-2] if learn else dx[0].size)  # multiply-adds of one GEMM
            split = parallel.splitting() and self.spans() and self.group == 1 and learn and down
            parts = min(parallel.threads(), dx.shape[1]) if split and work >= parallel.MIN_SPLIT_TASKS else 1
            if parts > 1:
                self.product_scratch(dy, col)
                self.spans_scratch(dx.shape[1])
            tasks = []
            for k in range(parts):
                share = []
                if learn:
                    share.append(functools.partial(self.weight_gradient, dy, col, (k, parts)))
                if down:
                    share.append(functools.partial(self.convolve_transposed, dy, dx, (k, parts)))
                # every other thread in the other order: one reads the columns while one writes spans
                tasks += share[:: -1 if k % 2 else 1]
            parallel.together(*tasks, work=work)
            if down and self.extended:
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
            self.convolve_transposed(self.matrix(self.batch(b)), y)
            self.add_bias(y)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if self.num == 0:  # an empty batch adds nothing to the gradients
            return
        for t, down, b in zip(top, propagate_down, bottom):
            self.bias_backward(t)
            if not (down or self.param_propagate_down[0]):
                continue
            col = self.cols(self.batch(t, data=False))
            if self.param_propagate_down[0]:
                self.weight_gradient(self.matrix(self.batch(b)), col)
            if down:
                self.convolve(col, self.batch(b, data=False))
