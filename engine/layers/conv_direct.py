"""Direct 2-D convolution on the CPU, in float32: the compiled kernels of engine/native/direct_conv.c.

im2col + GEMM (engine.layers.conv_cpu) copies each input value kh kw times and BLAS then packs the
copy again; with few output channels (CIFAR-10 quick's 32) that copying costs as much as the
multiply. The direct kernels read the input in place, from a channels-last copy of a group of
images, and sum a tile of output positions by output channels in registers (isolated, on a 2-core
Zen 5 with AVX-512: 420-490 GFLOP/s on 3x3 and 5x5 layers of 32-512 channels, where the GEMM path
ran at 100-220 and torch's oneDNN at 380-460).
* forward: y = conv(x) (+ bias), threads over images (or over output-channel tiles for fewer images
  than threads); a grouped convolution one group after another;
* data gradient, stride 1: a forward convolution of dy, padded by dilation (k - 1) - pad, with the
  weights turned round and their in/out channels swapped (the kernels skip kernel rows that read
  only the padding); other strides (dilation 1): one such convolution per phase of the input,
  writing every s-th row and column of dx (engine.layers.conv_phases); dilated and strided: the
  GEMM path's scatter;
* weight gradient: a tile of output channels (dy broadcast) by two vectors of a kernel row's run of
  (column, channel) values, each thread summing its images into its own partial (a fixed order for
  a thread count), added into dW at the end, and db from dy while it is packed. First layers, whose
  runs fill under MIN_GRADIENT_FILL of a tile's vector lanes (3 channels x 5 columns: 15 of 32),
  take vectors along the output rows instead where the stride along the rows is 1 and the kernel
  at most 5 wide.
Where a pass loses to the GEMM path it is left to it, by rules measured in one process against it
(bench-style A/B, 2 threads): 1 x 1 kernels (no columns to save); groups of fewer than
MIN_GROUP_OUTPUTS outputs; first layers' weight gradients with strides or wide kernels (ResNet's and
CaffeNet's conv1); weights with over MAX_WEIGHT_SHARE values per value of the batch's output
(ResNet's 7 x 7 x 512 at batch 8: 12); and any weight gradient where the kernel set's vectors hold
fewer than MIN_GRADIENT_LANES floats. The weight gradient is bound by the FMAs, where the forward is
not: the AVX2 set ran the forward and data gradient as fast as the AVX-512 one, its weight gradient
1.5x slower than the GEMM path's (56 x 56 x 64: 9.8 against 6.6 ms; the baseline's 31 ms).
The sums run in another order than the reference's (engine.layers.conv), so they agree to float32
rounding, which the tests hold them to.

The library is an optional part of the install (setup.py): without a C compiler it is not built, and
``available()`` is False. ``BARISTA_DIRECT_CONV=0`` in the environment turns it off (to compare).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from engine import backend, compiled, parallel
from engine.layers import conv_phases
from engine.layers.conv_shape import ConvShape

_P, _I = compiled.POINTER, compiled.INDEX
ABI = 7  # dc_abi() of the C file these calls are written for: a stale build is not used

_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "dc_kernel_name": (ctypes.c_char_p, []),
    "dc_select": (ctypes.c_int, [ctypes.c_char_p]),
    "dc_tile_channels": (_I, []),
    "dc_scratch_floats": (_I, [_P, ctypes.c_int]),
    "dc_pack_weights": (None, [_P, _P, _I, _I, _I, _I, ctypes.c_int, _I, _I, _P]),
    "dc_forward": (None, [_P, _P, _P, _P, _P, _I, _I, _I, _P]),
    "dc_weight_gradient": (None, [_P, _P, _P, _P, _P, _I, _I, _I, _P]),
    "dc_add_weight_gradient": (None, [_P, _P, _P]),
    "dc_gradient_floats": (_I, [_P]),
    "dc_lanes": (_I, []),
    "dc_rows_apply": (ctypes.c_int, [_P]),
    "dc_rows_scratch_floats": (_I, [_P]),
    "dc_weight_gradient_rows": (None, [_P, _P, _P, _P, _P, _I, _P]),
}


def _load() -> Any:
    """The compiled library, its argument types set; None where it was not built or is turned off."""
    return compiled.load("engine._direct_conv", "dc_abi", ABI, "BARISTA_DIRECT_CONV", _SIGNATURES)


_lib = _load()


# The weight gradient runs direct where its tiles fill at least this share of their vector lanes, and
# where the weight has at most this many values per value of the batch's output (DirectConv).
MIN_GRADIENT_FILL = 0.75
MAX_WEIGHT_SHARE = 4.0
MIN_GRADIENT_LANES = 16  # the weight gradient runs direct with AVX-512's vectors, not narrower ones
MIN_GROUP_OUTPUTS = 16  # grouped convolutions run direct with at least this many outputs a group


def available() -> bool:
    return _lib is not None


def kernel_name() -> str:
    """The instruction set the kernels run with ("avx512", "avx2", "baseline"), or "" when not built."""
    return compiled.kernel_name(_lib, "dc_kernel_name")


def select(name: str) -> bool:
    """Run the kernels of that instruction set from now on; False if this CPU cannot (tests)."""
    return compiled.select(_lib, "dc_select", name)


def applies(group: int, num_output: int, kernel: tuple[int, ...]) -> bool:
    """Whether the direct kernels run a 2-D convolution of this group count, output count and kernel
    (in float32: the calls say False for other arrays). A 1 x 1 kernel stays with the GEMM path,
    which needs no columns for it (ResNet-18's 1 x 1 projections: 3.5 against 1.3 ms a backward,
    direct); so do groups of fewer than MIN_GROUP_OUTPUTS outputs, which fill few lanes of a tile."""
    grouped_ok = group == 1 or num_output // group >= MIN_GROUP_OUTPUTS
    return _lib is not None and grouped_ok and kernel != (1, 1)


def _takes(arrays: dict[tuple[int, ...], Any]) -> bool:
    """Whether the kernels can take these arrays as they are: each C-contiguous float32 with the
    shape it is keyed by (-1: any batch). The kernels index memory by the geometry alone, so an
    array of another shape is refused here rather than read out of bounds."""
    for shape, a in arrays.items():
        if not (a.flags.c_contiguous and a.dtype == np.float32 and a.ndim == len(shape)):
            return False
        if any(want not in (-1, have) for want, have in zip(shape, a.shape)):
            return False
    return True


class DirectConv:
    """One convolution geometry (the convolution view of engine.layers.conv), run by the kernels.
    Groups run one after another, each a convolution of its slice of every image's channels."""

    def __init__(self, shape: ConvShape) -> None:
        assert _lib is not None
        channels, num_output, group, kernel, stride, pad, dilation, conv_in, conv_out = shape
        self.c, self.o, self.g, self.kernel, self.stride = channels, num_output, group, kernel, stride
        self.cg, self.og = channels // group, num_output // group
        self.conv_in, self.conv_out = conv_in, conv_out
        self.in_values, self.out_values = channels * math.prod(conv_in), num_output * math.prod(conv_out)
        self.tile = int(_lib.dc_tile_channels())
        self.workspace = backend.Workspace()  # the per-thread partial weight gradients
        # The weight gradient sums its tiles over the positions, and how its kernel rows' runs of
        # (kernel column, channel) fill their vector tiles decides whether it pays: a first layer's
        # (3 channels x 7 columns: 21 of 32 lanes) does not gain on the GEMM path (ResNet's conv1: 10.3
        # against 10.1 ms; CIFAR-10's conv1 level).
        run = kernel[1] * self.cg if dilation[1] == 1 else self.cg
        self.gradient_fill = run / (-(-run // self.tile) * self.tile)
        # A group's geometry; images a whole image apart (the input's and the output's values).
        steps = (self.in_values, self.out_values)
        self.geometry = conv_phases.geometry(
            self.cg, conv_in, self.og, kernel, stride, pad, dilation, conv_out, steps
        )
        # The stride-1 data gradient: dY (O channels, the output's size) padded by d (k - 1) - p,
        # convolved with the flipped weights into C channels of the input's size.
        flip_pad = tuple(d * (k - 1) - p for k, p, d in zip(kernel, pad, dilation))
        # Those (stride 1 along the rows, kernels up to 5 wide) take vectors along the output rows.
        self.by_rows = bool(_lib.dc_rows_apply(self.geometry.ctypes.data))
        self.flipped = None
        if all(s == 1 for s in stride) and min(flip_pad) >= 0:
            self.flipped = conv_phases.geometry(
                self.og, conv_out, self.cg, kernel, (1, 1), flip_pad, dilation, conv_in,
                (self.out_values, self.in_values),
            )  # fmt: skip
        # Other strides (dilation 1): one stride-1 convolution per phase of the input (conv_phases).
        self.phases = None
        if self.flipped is None and dilation == (1, 1) and len(kernel) == 2:
            self.phases = conv_phases.phases(self.cg, self.og, kernel, stride, pad, shape)

    @property
    def takes_data_gradient(self) -> bool:
        """Whether the kernels run this geometry's data gradient (for arrays they can take)."""
        return self.flipped is not None or self.phases is not None

    def group_weights(self, w: Any, k: int) -> Any:
        """Group k's weights (O/G, C/G, kh, kw), contiguous float32."""
        return np.ascontiguousarray(w.reshape(self.g, self.og, self.cg, *self.kernel)[k], np.float32)

    def packed_weights(self, w: Any, outputs: int, inputs: int, flip: bool, phase: Any = None) -> Any:
        """One group's weights w (O/G, C/G, kh, kw) packed for the kernels (flipped: the data
        gradient's, C/G outputs from O/G inputs; of a phase's taps only, where it is given)."""
        tiles = -(-outputs // self.tile)
        kernel = self.kernel if phase is None else tuple(int(v) for v in phase.geometry[4:6])
        size = tiles * kernel[0] * kernel[1] * inputs * self.tile
        packed = backend.scratch("direct_conv_weights", (size,), np.float32)
        w0, p0 = w.ctypes.data, packed.ctypes.data
        taps = None if phase is None else phase.taps.ctypes.data

        def pack(start: int, stop: int) -> None:
            _lib.dc_pack_weights(w0, p0, self.og, self.cg, *kernel, int(flip), start, stop, taps)

        # a transposing copy, bound by cache misses: 512 x 512 x 3 x 3 took 1.9 ms on one thread
        parallel.run(pack, tiles, np, parallel.grain(size // tiles))
        return packed

    def convolve(
        self, x0: int, packed: Any, y0: int, b0: int | None, n: int, geometry: Any, outputs: int
    ) -> None:
        """y = conv(x) (+ bias) for one group, at those addresses: a slice of images (or of
        output-channel tiles) a thread."""
        tiles = -(-outputs // self.tile)
        floats = int(_lib.dc_scratch_floats(geometry.ctypes.data, 0))
        x_step, y_step = int(geometry[14]) * 4, int(geometry[15]) * 4
        w0, g0 = packed.ctypes.data, geometry.ctypes.data

        def images(start: int, stop: int) -> None:
            scratch = backend.scratch("direct_conv", (floats,), np.float32)
            x_start, y_start = x0 + start * x_step, y0 + start * y_step
            _lib.dc_forward(x_start, w0, b0, y_start, g0, stop - start, 0, tiles, scratch.ctypes.data)

        def channel_tiles(start: int, stop: int) -> None:
            scratch = backend.scratch("direct_conv", (floats,), np.float32)
            _lib.dc_forward(x0, w0, b0, y0, g0, n, start, stop, scratch.ctypes.data)

        if n >= parallel.threads() or tiles == 1:
            parallel.run(images, n, np)
        else:
            parallel.run(channel_tiles, tiles, np)

    def forward(self, x: Any, w: Any, y: Any, bias: Any = None) -> bool:
        """y (N, O, OH, OW) = conv(x (N, C, H, W)) (+ bias); False (nothing done) for arrays the
        kernels cannot take in place (not contiguous float32)."""
        n = x.shape[0]
        if not _takes({(-1, self.c, *self.conv_in): x, (n, self.o, *self.conv_out): y}):
            return False
        bias = None if bias is None else np.ascontiguousarray(bias, np.float32)
        for k in range(self.g):
            packed = self.packed_weights(self.group_weights(w, k), self.og, self.cg, False)
            x0 = x.ctypes.data + k * self.cg * math.prod(self.conv_in) * 4
            y0 = y.ctypes.data + k * self.og * math.prod(self.conv_out) * 4
            b0 = None if bias is None else bias.ctypes.data + k * self.og * 4
            self.convolve(x0, packed, y0, b0, n, self.geometry, self.og)
        return True

    def data_gradient(self, dy: Any, w: Any, dx: Any) -> bool:
        """dx (N, C, H, W) = the data gradient of dy (N, O, OH, OW); False where the kernels do not
        run it (dilation with a stride, or arrays they cannot take)."""
        n = dy.shape[0]
        if not self.takes_data_gradient or not _takes(
            {(-1, self.o, *self.conv_out): dy, (n, self.c, *self.conv_in): dx}
        ):
            return False
        for k in range(self.g):
            weights = self.group_weights(w, k)
            dy0 = dy.ctypes.data + k * self.og * math.prod(self.conv_out) * 4
            dx0 = dx.ctypes.data + k * self.cg * math.prod(self.conv_in) * 4
            if self.flipped is not None:
                packed = self.packed_weights(weights, self.cg, self.og, True)
                self.convolve(dy0, packed, dx0, None, n, self.flipped, self.cg)
                continue
            for phase in self.phases or ():
                (ry, rx), (sy, sx) = phase.start, self.stride
                if phase.geometry is None:  # no kernel tap reaches these rows and columns
                    dx[:, k * self.cg : (k + 1) * self.cg, ry::sy, rx::sx] = 0
                    continue
                packed = self.packed_weights(weights, self.cg, self.og, True, phase)
                start = dx0 + (ry * self.conv_in[1] + rx) * 4
                self.convolve(dy0, packed, start, None, n, phase.geometry, self.cg)
        return True

    def weight_gradient(self, x: Any, dy: Any, dw: Any, db: Any = None) -> bool:
        """dw (O, C/G, kh, kw) += the sum over images of x's windows times dy (and db += dy's sum over
        images and positions); False for arrays the kernels cannot take."""
        # A weight much larger than the batch's outputs (ResNet's 7 x 7 x 512 at batch 8: 2.4M against
        # 200k values) stays with the GEMM path: each thread's sums of the whole weight, cleared and
        # added, cost as much as they save (5.9 against 5.9 ms; threads over output channels instead
        # each re-read 1 MB of packed images per tile: 10.1 against 7.4). 14 x 14 x 256 (1.5 weight
        # values per output value) gains: 4.5 against 5.8.
        n = x.shape[0]
        shapes = {
            (-1, self.c, *self.conv_in): x,
            (n, self.o, *self.conv_out): dy,
            (self.o, self.cg, *self.kernel): dw,
        }
        if not _takes(shapes) or int(_lib.dc_lanes()) < MIN_GRADIENT_LANES:
            return False
        if self.gradient_fill < MIN_GRADIENT_FILL:
            return self.by_rows and self.weight_gradient_by_rows(x, dy, dw, db)
        if dw.size > MAX_WEIGHT_SHARE * dy.size:
            return False
        g0 = self.geometry.ctypes.data
        sums = int(_lib.dc_gradient_floats(g0))
        floats = int(_lib.dc_scratch_floats(g0, 1))

        def tiles(x0: int, dy0: int, total: int, bias: int, images: int, scratch: int) -> None:
            _lib.dc_weight_gradient(x0, dy0, total, bias, g0, images, 0, self.og, scratch)

        for k in range(self.g):
            total, bias = self.summed_over_images(x, dy, k, "dw", sums, floats, tiles)
            _lib.dc_add_weight_gradient(total.ctypes.data, dw[k * self.og :].ctypes.data, g0)
            if db is not None:
                db[k * self.og : (k + 1) * self.og] += bias
        return True

    def summed_over_images(
        self, x: Any, dy: Any, k: int, name: str, size: int, floats: int, kernel: Callable[..., None]
    ) -> tuple[Any, ...]:
        """Group k's weight-gradient sums (``size`` floats) and bias sums: ``kernel`` (addresses of x,
        dy, the sums, the bias sums; images; scratch) over a slice of images a thread, each into its
        own sums, added in a fixed order."""
        x0, dy0 = self.group_inputs(x, dy, k)
        parts: dict[int, tuple[Any, ...]] = {}

        def images(start: int, stop: int) -> None:
            scratch = backend.scratch("direct_conv", (floats,), np.float32)
            sums = self.workspace.get(f"{name}{start}", (size,), np.float32, np)
            bias = self.workspace.get(f"db{start}", (self.og,), np.float32, np)
            sums[...] = 0
            bias[...] = 0
            x_start, dy_start = x0 + start * self.in_values * 4, dy0 + start * self.out_values * 4
            kernel(x_start, dy_start, sums.ctypes.data, bias.ctypes.data, stop - start, scratch.ctypes.data)
            parts[start] = sums, bias

        parallel.run(images, x.shape[0], np)
        return parallel.ordered_sums(parts)

    def group_inputs(self, x: Any, dy: Any, k: int) -> tuple[int, int]:
        """The addresses of group k's channels in the first image of x and of dy."""
        x0 = x.ctypes.data + k * self.cg * math.prod(self.conv_in) * 4
        dy0 = dy.ctypes.data + k * self.og * math.prod(self.conv_out) * 4
        return x0, dy0

    def weight_gradient_by_rows(self, x: Any, dy: Any, dw: Any, db: Any) -> bool:
        """The weight gradient of a first layer (few channels): vectors of sums along the output
        rows, each thread its own, their lanes added into dW at the end."""
        g0, lanes = self.geometry.ctypes.data, int(_lib.dc_lanes())
        floats = int(_lib.dc_rows_scratch_floats(g0))
        group_size = dw.size // self.g

        def rows(x0: int, dy0: int, sums: int, bias: int, images: int, scratch: int) -> None:
            _lib.dc_weight_gradient_rows(x0, dy0, sums, bias, g0, images, scratch)

        for k in range(self.g):
            sums, bias = self.summed_over_images(x, dy, k, "rows", group_size * lanes, floats, rows)
            group = slice(k * self.og, (k + 1) * self.og)
            dw[group] += sums.reshape(self.og, self.cg, *self.kernel, lanes).sum(axis=-1)
            if db is not None:
                db[group] += bias
        return True
