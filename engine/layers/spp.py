"""SPP: spatial pyramid pooling, as Caffe's SPPLayer: pooling at pyramid_height levels, flattened and joined.

Shapes: (N, C, H, W) -> (N, C * sum_l 4^l) for levels l = 0 .. pyramid_height - 1; a single level gives
(N, C, 1, 1), the pooling top itself, as in Caffe. Level l pools 2^l x 2^l bins: kernel = stride =
ceil(H / 2^l), pad = (kernel 2^l - H + 1) / 2 (and the same for W), with the Pooling layer's rules and
checks (a pad that is not smaller than the kernel is refused, as in Caffe).
Gradient: the sum over levels of each pooling's gradient.
"""

from __future__ import annotations

import math

from engine.blob import Blob, shape_string
from engine.layers.base import Layer
from engine.layers.pooling import PoolingLayer
from engine.layers.registry import register_layer
from proto import caffe_pb2


@register_layer("SPP")
class SPPLayer(Layer):
    exact_num_bottom = 1
    exact_num_top = 1
    family = "pooling"
    params = ("spp_param",)
    template = "spp_param { pyramid_height: 2 }"

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        self.height = self.param.spp_param.pyramid_height
        if self.height < 1:
            raise self.error("pyramid_height must be at least 1")
        if self.height > 31:  # the finest level's 2^(height-1) bins per side must be an int
            raise self.error(f"pyramid_height {self.height} is too large: at most 31")
        self.built_for: tuple[int, ...] = ()

    def level_param(self, level: int, height: int, width: int) -> caffe_pb2.LayerParameter:
        bins = 2**level
        kh, kw = math.ceil(height / bins), math.ceil(width / bins)
        pooling = caffe_pb2.PoolingParameter(
            pool=caffe_pb2.SPPParameter.PoolMethod.Name(self.param.spp_param.pool),  # the same names
            kernel_h=kh,
            kernel_w=kw,
            stride_h=kh,
            stride_w=kw,
            pad_h=(kh * bins - height + 1) // 2,
            pad_w=(kw * bins - width + 1) // 2,
        )
        name = f"{self.name}/level{level}"
        return caffe_pb2.LayerParameter(name=name, type="Pooling", phase=self.phase, pooling_param=pooling)

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        x = bottom[0]
        if x.num_axes != 4:
            raise self.error(
                f"input must have 4 axes (num, channels, height, width), got {shape_string(x.shape)}"
            )
        if min(x.shape[2:]) <= 0:
            raise self.error("input dimensions cannot be zero")
        if x.shape != self.built_for:  # the pooling geometry depends on the input size
            self.levels = [
                PoolingLayer(self.level_param(i, *x.shape[2:]), self.xp, self.dtype)
                for i in range(self.height)
            ]
            self.inputs = [Blob(x.shape, self.dtype, self.xp) for _ in self.levels]
            self.outputs = [Blob((), self.dtype, self.xp) for _ in self.levels]
            for level, inp, out in zip(self.levels, self.inputs, self.outputs):
                level.setup([inp], [out])
            self.built_for = x.shape
        for level, inp, out in zip(self.levels, self.inputs, self.outputs):
            level.reshape([inp], [out])
        if self.height == 1:
            top[0].reshape(self.outputs[0].shape)
        else:
            top[0].reshape((x.shape[0], sum(out.count(1) for out in self.outputs)))

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        n, start = bottom[0].shape[0], 0
        y = top[0].data.reshape(n, -1)
        for level, inp, out in zip(self.levels, self.inputs, self.outputs):
            inp.data = bottom[0].data  # the levels read the bottom itself; each keeps its own diff
            level.forward([inp], [out])
            y[:, start : start + out.count(1)] = out.data.reshape(n, -1)
            start += out.count(1)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0]:
            return
        n, start = bottom[0].shape[0], 0
        dy = top[0].diff.reshape(n, -1)
        bottom[0].diff[...] = 0
        for level, inp, out in zip(self.levels, self.inputs, self.outputs):
            out.diff[...] = dy[:, start : start + out.count(1)].reshape(out.shape)
            start += out.count(1)
            level.backward([out], [True], [inp])
            bottom[0].diff += inp.diff
