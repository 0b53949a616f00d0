"""BatchNorm: normalizes each channel by batch statistics (TRAIN) or running ones (TEST)."""

from __future__ import annotations

from typing import Any

from engine.blob import Blob, shape_string
from engine.layers import facts
from engine.layers.base import Layer
from engine.layers.registry import register_layer
from proto import caffe_pb2


@register_layer("BatchNorm")
class BatchNormLayer(Layer):
    """y = (x - mean_c) / sqrt(var_c + eps) for x of shape (N, C, ...), statistics per channel c.

    Without scale or shift (follow it with a Scale layer for those). blobs, all with lr_mult 0:
    [0] mean sum (C,), [1] variance sum (C,), [2] scale factor s (1,). Batch statistics (the
    default in TRAIN) update them: s = maf * s + 1, mean_sum = maf * mean_sum + mean,
    var_sum = maf * var_sum + m / (m - 1) * var, with m = count / C. Global statistics (the
    default in TEST) are mean_sum / s and var_sum / s (0 when s is 0).

    dE/dx = (dE/dy - mean(dE/dy) - y * mean(dE/dy * y)) / sqrt(var + eps) with batch statistics
    (means over every axis but C), dE/dy / sqrt(var + eps) with global ones. In place allowed.
    """

    exact_num_bottom = 1
    exact_num_top = 1
    family = "normalisation"
    params = ("batch_norm_param",)

    @classmethod
    def learnable_blobs(cls, param: Any) -> list[facts.ParamBlob]:
        note = "a running statistic: starts at 0 and is accumulated, not learned"
        return [
            facts.ParamBlob("mean", None, note=note),
            facts.ParamBlob("variance", None, note=note),
            facts.ParamBlob("scale factor", None, note="the moving-average normaliser: starts at 0"),
        ]

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.batch_norm_param
        self.moving_average_fraction = p.moving_average_fraction
        self.eps = p.eps
        self.use_global_stats = (
            p.use_global_stats if p.HasField("use_global_stats") else self.phase == caffe_pb2.TEST
        )
        if bottom[0].num_axes == 0:
            raise self.error("bottom must have at least 1 axis")
        self.channels = 1 if bottom[0].num_axes == 1 else bottom[0].shape[1]
        if not self.blobs:
            c = self.channels
            self.blobs = [self.new_blob((c,)), self.new_blob((c,)), self.new_blob((1,))]
        # The statistics are not learned: give each blob lr_mult 0, and refuse any other setting.
        for i in range(len(self.blobs)):
            if len(self.param.param) == i:
                self.param.param.add().lr_mult = 0
            elif self.param.param[i].lr_mult != 0:
                raise self.error(
                    f"cannot configure batch normalization statistics as layer parameters: "
                    f"param {i} has lr_mult {self.param.param[i].lr_mult}, it must be 0"
                )
        self.x_norm: Any = None
        self.std: Any = None

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        channels = 1 if bottom[0].num_axes == 1 else bottom[0].shape[1]
        if channels != self.channels:
            raise self.error(f"bottom {shape_string(bottom[0].shape)} must have {self.channels} channels")
        top[0].reshape(bottom[0].shape)

    def _view(self, blob: Blob, array: Any) -> Any:
        return array.reshape(blob.shape[0], self.channels, -1)  # (N, C, spatial)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        if bottom[0].count() == 0:  # nothing to normalise, and no statistics to gather
            return
        xp = self.xp
        x = self._view(bottom[0], bottom[0].data)
        mean_sum, var_sum, factor = (b.data for b in self.blobs)
        if self.use_global_stats:
            nonzero = factor != 0
            inverse = xp.where(nonzero, 1 / xp.where(nonzero, factor, 1), 0)
            mean, var = mean_sum * inverse, var_sum * inverse
            centered = x - mean.reshape(1, -1, 1)
        else:
            mean = x.mean(axis=(0, 2))
            centered = x - mean.reshape(1, -1, 1)
            var = (centered * centered).mean(axis=(0, 2))
            m = bottom[0].count() // self.channels
            maf = self.moving_average_fraction
            factor *= maf
            factor += 1
            mean_sum *= maf
            mean_sum += mean
            var_sum *= maf
            var_sum += var * (m / (m - 1) if m > 1 else 1.0)
        self.std = xp.sqrt(var + self.eps).reshape(1, -1, 1)
        centered /= self.std
        self.x_norm = centered  # kept: a later in-place layer may overwrite the top
        top[0].data[...] = centered.reshape(bottom[0].shape)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0] or bottom[0].count() == 0:
            return
        dy = self._view(top[0], top[0].diff)
        if self.use_global_stats:
            dx = dy / self.std
        else:
            y = self.x_norm
            dx = dy - dy.mean(axis=(0, 2), keepdims=True)
            dx -= y * (dy * y).mean(axis=(0, 2), keepdims=True)
            dx /= self.std
        bottom[0].diff[...] = dx.reshape(bottom[0].shape)
