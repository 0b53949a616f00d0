"""Input and DummyData: bottomless layers that shape their tops (and DummyData fills them).

Input: ``input_param.shape`` gives one shape per top, one shape for every top, or none (the
tops are shaped later by the user). The shapes are set once, in setup; ``reshape`` does nothing,
so a top the user reshapes keeps its new shape, and ``forward`` leaves the values the user copied
in. No gradient.

DummyData: ``dummy_data_param.shape`` (or the legacy ``num``/``channels``/``height``/``width``),
each given once for every top or once per top, and ``data_filler``: none (constant 0), one shared
by every top, or one per top. As Caffe's ``refill_``: a constant filler fills its tops once, at
setup; any other filler draws them again on every forward. No gradient.
"""

from __future__ import annotations

from engine.blob import Blob
from engine.fillers import Filler, get_filler
from engine.layers.base import Layer
from engine.layers.registry import register_layer
from proto import caffe_pb2


@register_layer("Input")
class InputLayer(Layer):
    exact_num_bottom = 0
    min_top = 1
    family = "data"
    params = ("input_param",)
    template = "input_param { shape { dim: 1 dim: 3 dim: 224 dim: 224 } }"

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        shapes = self.param.input_param.shape
        if len(shapes) not in (0, 1, len(top)):
            raise self.error(
                f"specify 'shape' once, once per top blob, or not at all: {len(top)} tops vs. "
                f"{len(shapes)} shapes"
            )
        if shapes:
            for i, blob in enumerate(top):
                blob.reshape(shapes[0 if len(shapes) == 1 else i])

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing: the tops keep whatever shape setup or the user gave them."""

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing: the user writes the tops' data."""


@register_layer("DummyData")
class DummyDataLayer(Layer):
    exact_num_bottom = 0
    min_top = 1
    family = "data"
    params = ("dummy_data_param",)
    template = "dummy_data_param { shape { dim: 64 dim: 1 dim: 28 dim: 28 } }"

    def layer_setup(self, bottom: list[Blob], top: list[Blob]) -> None:
        p = self.param.dummy_data_param
        n = len(top)
        if len(p.data_filler) not in (0, 1, n):
            raise self.error(
                f"the number of data fillers must be 0, 1 or the number of tops ({n}); "
                f"got {len(p.data_filler)}"
            )
        legacy = {f: list(getattr(p, f)) for f in ("num", "channels", "height", "width")}
        if any(legacy.values()):
            if p.shape:
                raise self.error("both shape and the legacy num/channels/height/width are specified")
            for field, values in legacy.items():
                if len(values) not in (1, n):
                    raise self.error(f"specify '{field}' once or once per top blob ({n}); got {len(values)}")
            for i, blob in enumerate(top):
                blob.reshape(tuple(v[0] if len(v) == 1 else v[i] for v in legacy.values()))
        else:
            if len(p.shape) not in (1, n):
                raise self.error(f"specify 'shape' once or once per top blob ({n}); got {len(p.shape)}")
            for i, blob in enumerate(top):
                blob.reshape(p.shape[0 if len(p.shape) == 1 else i])

        params = list(p.data_filler) or [caffe_pb2.FillerParameter(type="constant", value=0)]
        self.fillers: list[Filler] = [get_filler(fp) for fp in params]
        constant = [fp.type == "constant" for fp in params]
        # Constant tops are filled now and never again; the others are drawn on every forward.
        self.refill = [not c for c in constant]
        for i, blob in enumerate(top):
            k = self._filler_index(i)
            if constant[k]:
                self.fillers[k].fill(blob)
            else:  # drawn at each forward: refuse a filler that cannot fill this top now, not then
                self.fillers[k].check(blob.shape)

    def _filler_index(self, top_index: int) -> int:
        return top_index if len(self.fillers) > 1 else 0

    def reshape(self, bottom: list[Blob], top: list[Blob]) -> None:
        """Nothing: the shapes are fixed at setup."""

    def forward(self, bottom: list[Blob], top: list[Blob]) -> None:
        for i, blob in enumerate(top):
            k = self._filler_index(i)
            if self.refill[k]:
                self.fillers[k].fill(blob)
