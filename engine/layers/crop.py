"""Crop: cut bottom[0] down to the shape of bottom[1] on the axes from ``axis`` on, as Caffe's CropLayer.

Shapes: bottom[0] (d_0, ..., d_n), bottom[1] (e_0, ..., e_n) of the same number of axes -> top
(d_0, ..., d_{axis-1}, e_axis, ..., e_n). The crop on axis i starts at ``offset``: none given means 0,
one value applies to every cropped axis, otherwise one per cropped axis. bottom[1] gives only a shape.
Gradient: dE/dx_0 is dE/dy in the cropped region and 0 elsewhere; bottom[1] gets 0.
"""

from __future__ import annotations

from engine.blob import Blob
from engine.layers.base import Layer
from engine.layers.registry import register_layer


@register_layer("Crop")
class CropLayer(Layer):
    exact_num_bottom = 2
    exact_num_top = 1
    family = "structure"
    params = ("crop_param",)

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.crop_param
        try:
            self.start_axis = bottom[0].canonical_axis_index(p.axis)
        except ValueError as exc:
            raise self.error(str(exc)) from None
        if len(p.offset) > 1 and self.start_axis + len(p.offset) != bottom[0].num_axes:
            raise self.error(
                f"number of offset values specified ({len(p.offset)}) must be equal to the number of "
                f"dimensions following axis {self.start_axis} of a {bottom[0].num_axes}-D bottom"
            )

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        if bottom[0].num_axes != bottom[1].num_axes:
            raise self.error(f"bottoms must have the same number of axes, got {self.describe_shapes(bottom)}")
        offsets = list(self.param.crop_param.offset)
        self.region: tuple[slice, ...] = ()
        shape = []
        for i, (size, wanted) in enumerate(zip(bottom[0].shape, bottom[1].shape)):
            if i < self.start_axis:
                offset, wanted = 0, size
            else:
                offset = offsets[0] if len(offsets) == 1 else offsets[i - self.start_axis] if offsets else 0
                if size - offset < wanted:
                    raise self.error(
                        f"the crop for axis {i} is out-of-bounds with size {wanted} and offset {offset}"
                    )
            self.region += (slice(offset, offset + wanted),)
            shape.append(wanted)
        top[0].reshape(tuple(shape))

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        top[0].data[...] = bottom[0].data[self.region]

    def backward(self, top: list[Blob], propagate_down: list[bool], bottom: list[Blob]) -> None:
        if propagate_down[0]:
            bottom[0].diff[...] = 0
            bottom[0].diff[self.region] = top[0].diff
        if propagate_down[1]:
            bottom[1].diff[...] = 0
