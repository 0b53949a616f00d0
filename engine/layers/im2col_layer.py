"""Im2col: the columns a convolution multiplies, as a layer (Caffe's Im2colLayer).

Shapes: (N, C, *in) -> (N, C prod(kernel), *out), out = floor((in + 2 pad - extent) / stride) + 1 (or 1;
see engine.layers.conv.far_padding) as for Convolution, whose kernel/pad/stride/dilation fields (and
axis) it reads; output channel c prod(kernel) + k holds input channel c at kernel offset k (raster
order) for every output position.
Gradient: col2im, each column entry added back to the pixel it was copied from.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from engine.blob import Blob, shape_string
from engine.layers.base import Layer
from engine.layers.conv import check_workspace, convolution_problems, far_padding, spatial_geometry
from engine.layers.im2col import batch_first, col2im, conv_output_shape, im2col, padded_shape
from engine.layers.registry import register_layer


@register_layer("Im2col")
class Im2colLayer(Layer):
    exact_num_bottom = 1
    exact_num_top = 1
    family = "vision"
    params = ("convolution_param",)
    template = "convolution_param { kernel_size: 3 }"

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        return convolution_problems(param, num_output=False)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        try:
            self.channel_axis = bottom[0].canonical_axis_index(self.param.convolution_param.axis)
        except ValueError as exc:
            raise self.error(str(exc)) from None
        self.num_spatial = bottom[0].num_axes - self.channel_axis - 1
        if self.num_spatial < 1:
            raise self.error(f"needs at least one spatial axis after axis {self.channel_axis}")
        self.kernel, self.stride, self.pad, self.dilation = spatial_geometry(self, self.num_spatial)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        axis, shape = self.channel_axis, bottom[0].shape
        if len(shape) != axis + 1 + self.num_spatial:
            raise self.error(f"bottom num_axes may not change, got {shape_string(shape)}")
        self.spatial = shape[axis + 1 :]
        # An extent past the padded input by less than the stride: the input extended by zeros, as Caffe.
        far = far_padding(self, self.spatial, self.kernel, self.pad, self.stride, self.dilation)
        self.wide = tuple(i + f for i, f in zip(self.spatial, far))
        self.out = conv_output_shape(self.wide, self.kernel, self.pad, self.stride, self.dilation)
        self.num, self.channels = bottom[0].count(0, axis), shape[axis]
        padded = (self.channels, *padded_shape(self.wide, self.pad), self.num)
        check_workspace(self, self.kernel, {"padded input": padded})
        top[0].reshape((*shape[:axis], self.channels * math.prod(self.kernel), *self.out))

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        x = bottom[0].data.reshape(self.num, self.channels, *self.spatial)
        if self.wide != self.spatial:
            wide = self.xp.zeros((self.num, self.channels, *self.wide), self.dtype)
            wide[(..., *(slice(0, n) for n in self.spatial))] = x
            x = wide
        col = im2col(x, self.kernel, self.pad, self.stride, self.dilation)
        rows = self.channels * math.prod(self.kernel)  # not -1: the batch may be empty
        top[0].data.reshape(self.num, rows, *self.out)[...] = batch_first(
            col.reshape(rows, *self.out, self.num)
        )

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0]:
            return
        dy = top[0].diff.reshape(self.num, self.channels * math.prod(self.kernel), *self.out)
        col = self.xp.moveaxis(dy, 0, -1).reshape(self.channels, *self.kernel, *self.out, self.num)
        dx = col2im(col, self.wide, self.kernel, self.pad, self.stride, self.dilation)
        crop = (..., *(slice(0, n) for n in self.spatial))
        bottom[0].diff.reshape(self.num, self.channels, *self.spatial)[...] = dx[crop]
