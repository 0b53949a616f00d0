"""Scale: multiplies by a blob broadcast over the leading and trailing axes, optionally adds a bias."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from engine import backend, parallel
from engine.blob import Blob
from engine.fillers import get_filler
from engine.layers import facts
from engine.layers.base import Layer
from engine.layers.bias import BiasLayer, broadcast_dims, learned_shape
from engine.layers.channel_sums import dot_per_channel, sum_per_channel
from engine.layers.registry import register_layer
from proto import caffe_pb2


@register_layer("Scale")
class ScaleLayer(Layer):
    """y = x * s (+ b), s broadcast: x is (outer, D, inner) with s of count D on the middle axes.

    s is bottom[1], or blobs[0] learned (shape from axis/num_axes, default filler constant 1).
    With bias_term, a Bias layer adds b (the last of blobs, default filler constant 0), as Caffe.
    dE/dx = dE/dy * s; dE/ds = sum over outer and inner of dE/dy * x; dE/db = sum of dE/dy.
    In place allowed: the input is kept for dE/ds.
    """

    min_bottom = 1
    max_bottom = 2
    exact_num_top = 1
    bias_layer: BiasLayer | None = None  # the bias_term's helper layer, sharing the last blob
    family = "normalisation"
    params = ("scale_param",)
    template = "scale_param { bias_term: true }"

    @classmethod
    def learnable_blobs(cls, param: Any) -> list[facts.ParamBlob]:
        found = []
        if len(param.bottom) < 2:  # a second bottom supplies the factors: nothing learned
            found.append(facts.ParamBlob("scale", "scale_param.filler", facts.constant(1)))
        if param.scale_param.bias_term:
            found.append(facts.ParamBlob("bias", "scale_param.bias_filler", facts.constant()))
        return found

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.scale_param
        if len(bottom) == 1 and not self.blobs:
            blob = self.new_blob(learned_shape(self, bottom[0], p.axis, p.num_axes, "scale"))
            filler = p.filler if p.HasField("filler") else caffe_pb2.FillerParameter(type="constant", value=1)
            get_filler(filler).fill(blob)
            self.blobs = [blob]
        self.bias_layer = None
        if p.bias_term:
            self.bias_layer = BiasLayer(self._bias_param(bottom), xp=self.xp, dtype=self.dtype)
            self.bias_layer.setup([bottom[0]], top)
            if len(self.blobs) + len(bottom) < 3:  # no bias among the loaded blobs: take the new one
                self.blobs.append(self.bias_layer.blobs[0])
            else:
                self.bias_layer.blobs[0] = self.blobs[-1]
        self._kept_input: Any = None
        self.input_borrowed = False  # _kept_input is another layer's buffer (borrow_input)
        self.workspace = backend.Workspace()

    def to(self, xp: ModuleType) -> None:
        super().to(xp)
        if self.bias_layer is not None:
            self.bias_layer.to(xp)

    def _bias_param(self, bottom: list[Blob]) -> caffe_pb2.LayerParameter:
        p = self.param.scale_param
        param = caffe_pb2.LayerParameter(name=self.name, type="Bias", phase=self.phase)
        param.bias_param.axis = p.axis
        param.bias_param.num_axes = bottom[1].num_axes if len(bottom) > 1 else p.num_axes
        param.bias_param.filler.CopyFrom(p.bias_filler)
        return param

    def _scale(self, bottom: list[Blob]) -> Blob:
        return bottom[1] if len(bottom) > 1 else self.blobs[0]

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        scale = self._scale(bottom)
        self.dims = broadcast_dims(self, bottom[0], scale, self.param.scale_param.axis, "scale")
        if top[0] is not bottom[0]:
            top[0].reshape(bottom[0].shape)
        if self.bias_layer is not None:
            self.bias_layer.reshape([top[0]], top)

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        xp = self.xp
        x, y = bottom[0].data.reshape(self.dims), top[0].data.reshape(self.dims)
        kept = None
        if top[0] is bottom[0]:  # in place: keep x for the scale's gradient, one buffer across steps
            old = self._kept_input
            if old is None or self.input_borrowed or old.shape != x.shape or old.dtype != x.dtype:
                self._kept_input, self.input_borrowed = xp.empty_like(x), False
            kept = self._kept_input
        else:
            self._kept_input = None
        s = self._scale(bottom).data.reshape(1, -1, 1)
        b = None if self.bias_layer is None else self.bias_layer.blobs[0].data.reshape(1, -1, 1)

        def channels(start: int, stop: int) -> None:  # each range of D on its own: y = x * s + b
            c = slice(start, stop)
            if kept is not None:
                kept[:, c] = x[:, c]
            xp.multiply(x[:, c], s[:, c], out=y[:, c])
            if b is not None:
                y[:, c] += b[:, c]

        parallel.run(channels, self.dims[1], xp, parallel.grain(self.dims[0] * self.dims[2]))

    def borrow_input(self, x: Any) -> None:
        """The input of this in-place layer, as the layer before it keeps it (engine.fusion, which
        ran this forward with that layer's): this layer's backward reads it; a forward of this layer
        alone takes a buffer of its own again, and so never writes into it."""
        self._kept_input, self.input_borrowed = x.reshape(self.dims), True

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        xp = self.xp
        learned = len(bottom) == 1
        scale = self._scale(bottom)
        dy = top[0].diff.reshape(self.dims)
        dx = bottom[0].diff.reshape(self.dims)  # dy itself in place: written last, element-wise
        x = (self._kept_input if top[0] is bottom[0] else bottom[0].data).reshape(self.dims)
        bias = None
        if self.bias_layer is not None and self.param_propagate_down[-1]:
            bias = self.bias_layer.blobs[0].diff.reshape(-1)
        grad = None
        if (learned and self.param_propagate_down[0]) or (not learned and propagate_down[1]):
            grad = scale.diff.reshape(-1)
        s = scale.data.reshape(1, -1, 1)
        ones = None if bias is None else self.workspace.get("ones", (self.dims[2],), dy.dtype, xp, fill=1)

        def channels(start: int, stop: int) -> None:  # every sum is over one channel's own values
            c = slice(start, stop)
            if bias is not None:
                bias[c] += sum_per_channel(xp, dy[:, c], ones)
            if grad is not None:
                sums = dot_per_channel(xp, dy[:, c], x[:, c])
                if learned:
                    grad[c] += sums
                else:
                    grad[c] = sums
            if propagate_down[0]:
                xp.multiply(dy[:, c], s[:, c], out=dx[:, c])

        parallel.run(channels, self.dims[1], xp, parallel.grain(self.dims[0] * self.dims[2]))
