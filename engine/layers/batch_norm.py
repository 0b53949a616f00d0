"""BatchNorm: normalizes each channel by batch statistics (TRAIN) or running ones (TEST)."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine import backend, parallel
from engine.blob import Blob, shape_string
from engine.layers import channel_norm, facts
from engine.layers.base import Layer
from engine.layers.channel_sums import dot_per_channel, sum_per_channel
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
    On the CPU in float32 the compiled kernels run both passes (engine.layers.channel_norm), and
    with the in-place Scale after this layer folded in where the net runs the two as one
    (engine.fusion); elsewhere numpy or cupy array operations.
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
        self.workspace = backend.Workspace()

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
        if not self.forward_compiled(bottom, top):
            self._forward_arrays(bottom, top)

    def _x_norm(self, x: Any) -> Any:
        """The buffer x_norm is kept in (a later in-place layer may overwrite the top), one across steps."""
        if self.x_norm is None or self.x_norm.shape != x.shape or self.x_norm.dtype != x.dtype:
            self.x_norm = self.xp.empty_like(x)
        return self.x_norm

    def _global_statistics(self) -> tuple[Any, Any]:
        xp = self.xp
        mean_sum, var_sum, factor = (b.data for b in self.blobs)
        nonzero = factor != 0
        inverse = xp.where(nonzero, 1 / xp.where(nonzero, factor, 1), 0)
        return mean_sum * inverse, var_sum * inverse

    def _update_statistics(self, mean: Any, var: Any, m: int) -> None:
        """The running sums take in this batch's mean and (unbiased) variance, m values a channel."""
        mean_sum, var_sum, factor = (b.data for b in self.blobs)
        maf = self.moving_average_fraction
        factor *= maf
        factor += 1
        mean_sum *= maf
        mean_sum += mean
        var_sum *= maf
        var_sum += var * (m / (m - 1) if m > 1 else 1.0)

    def forward_compiled(
        self, bottom: list[Blob], top: list[Blob], scale: Any = None, bias: Any = None, relu: bool = False
    ) -> bool:
        """The forward by the compiled kernels (engine.layers.channel_norm), with y = y * scale + bias
        (then max(y, 0) where ``relu``) in the same pass where ``scale`` (C,) is given (the Scale and
        ReLU after this layer, engine.fusion); False, with nothing done, where they cannot run it
        (cupy, float64, a blob of no values)."""
        if bottom[0].count() == 0 or self.xp is not np or not channel_norm.available():
            return False
        x = self._view(bottom[0], bottom[0].data)
        batch = not self.use_global_stats
        c = self.channels
        mean, var = (np.empty(c, x.dtype), np.empty(c, x.dtype)) if batch else self._global_statistics()
        std = np.empty((1, c, 1), x.dtype)
        y = self._view(top[0], top[0].data)
        stats = (mean, var, std)
        if not channel_norm.forward(x, self._x_norm(x), y, batch, self.eps, stats, scale, bias, relu):
            return False
        self.std = std
        if batch:
            self._update_statistics(mean, var, bottom[0].count() // c)
        return True

    def _forward_arrays(self, bottom: list[Blob], top: list[Blob]) -> None:
        """The forward in numpy or cupy array operations."""
        xp = self.xp
        x = self._view(bottom[0], bottom[0].data)
        y = self._view(top[0], top[0].data)
        centered = self._x_norm(x)
        count = x.shape[0] * x.shape[2]  # values per channel
        ones = self.workspace.get("ones", (x.shape[2],), x.dtype, xp, fill=1)
        batch = not self.use_global_stats
        if batch:
            mean, var = xp.empty(self.channels, x.dtype), xp.empty(self.channels, x.dtype)
        else:
            mean, var = self._global_statistics()
        self.std = xp.empty((1, self.channels, 1), x.dtype)

        def channels(start: int, stop: int) -> None:
            # Every statistic is a channel's own: a range of channels is independent of the others.
            c = slice(start, stop)
            if batch:
                mean[c] = sum_per_channel(xp, x[:, c], ones) / count
            xp.subtract(x[:, c], mean[c].reshape(1, -1, 1), out=centered[:, c])
            if batch:
                var[c] = dot_per_channel(xp, centered[:, c], centered[:, c]) / count
            std = self.std[:, c]
            xp.sqrt(var[c] + self.eps, out=std.reshape(-1))
            xp.divide(centered[:, c], std, out=centered[:, c])
            y[:, c] = centered[:, c]

        parallel.run(channels, self.channels, xp, parallel.grain(count))
        if batch:
            self._update_statistics(mean, var, bottom[0].count() // self.channels)

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if not propagate_down[0] or bottom[0].count() == 0:
            return
        if not self.backward_compiled(top, bottom):
            self._backward_arrays(top, bottom)

    def backward_compiled(
        self,
        top: list[Blob],
        bottom: list[Blob],
        scale: Any = None,
        d_scale: Any = None,
        d_bias: Any = None,
        relu: bool = False,
    ) -> bool:
        """The backward by the compiled kernels, from dE/dy of the Scale after this layer where
        ``scale`` (C,) is given (engine.fusion: its d_scale and d_bias, where given, take their
        sums too), and of the ReLU after that where ``relu`` (the top's data its output); False,
        with nothing done, where they cannot run it."""
        if bottom[0].count() == 0 or self.xp is not np or not channel_norm.available() or self.x_norm is None:
            return False
        dy = self._view(top[0], top[0].diff)
        dx = self._view(bottom[0], bottom[0].diff)
        std = self.std.reshape(-1)
        batch = not self.use_global_stats
        keep = self._view(top[0], top[0].data) if relu else None
        return channel_norm.backward(dy, self.x_norm, dx, batch, std, scale, d_scale, d_bias, keep)

    def _backward_arrays(self, top: list[Blob], bottom: list[Blob]) -> None:
        """The backward in numpy or cupy array operations."""
        xp = self.xp
        dy = self._view(top[0], top[0].diff)
        dx = self._view(bottom[0], bottom[0].diff)  # may be dy itself (in place): element-wise
        y = self.x_norm
        count = dy.shape[0] * dy.shape[2]  # values per channel
        ones = self.workspace.get("ones", (dy.shape[2],), dy.dtype, xp, fill=1)

        def channels(start: int, stop: int) -> None:
            c = slice(start, stop)
            if self.use_global_stats:
                xp.divide(dy[:, c], self.std[:, c], out=dx[:, c])
                return
            mean_dy = (sum_per_channel(xp, dy[:, c], ones) / count).reshape(1, -1, 1)
            mean_product = dot_per_channel(xp, dy[:, c], y[:, c]).reshape(1, -1, 1) / count
            if xp is np:  # y * mean(dy y) into this thread's scratch, not a fresh array each step
                scratch = backend.scratch("bn_product", y[:, c].shape, y.dtype)
                product = xp.multiply(y[:, c], mean_product, out=scratch)
            else:
                product = y[:, c] * mean_product
            xp.subtract(dy[:, c], mean_dy, out=dx[:, c])
            dx[:, c] -= product
            dx[:, c] /= self.std[:, c]

        parallel.run(channels, self.channels, xp, parallel.grain(count))
