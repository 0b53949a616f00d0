"""The arguments of one 2-D convolution on the CPU, in the convolution view (conv input -> conv
output; engine.layers.conv): what the im2col/GEMM path (conv_cpu) and the direct kernels
(conv_direct) are both built from, and what decides whether a layer's path can be kept."""

from __future__ import annotations

from typing import NamedTuple


class ConvShape(NamedTuple):
    channels: int  # the conv input's
    num_output: int  # the conv output's channels
    group: int
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    pad: tuple[int, ...]
    dilation: tuple[int, ...]
    conv_in: tuple[int, ...]  # spatial sizes: the conv input's (with any far padding)
    conv_out: tuple[int, ...]
