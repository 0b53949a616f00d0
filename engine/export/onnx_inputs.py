"""Where values enter and pass through unchanged: Input and the data layers (graph inputs), Split,
Dropout, Silence and Parameter."""

from __future__ import annotations

from engine.export.onnx_context import LayerContext, maps

# Layers whose tops the caller feeds: their tops become the graph's inputs, named after the blobs.
DATA_TYPES = (
    "Input", "Data", "DummyData", "HDF5Data", "ImageData", "MemoryData", "WindowData",
)  # fmt: skip


@maps(*DATA_TYPES)
def data(c: LayerContext) -> None:
    for name, shape in zip(c.tops, c.top_shapes):
        c.g.inputs.append((name, shape))


@maps("Split")
def split(c: LayerContext) -> None:
    for top in c.tops:
        c.g.op("Identity", c.x, out=top)


@maps("Dropout")
def dropout(c: LayerContext) -> None:
    """Identity at TEST (Caffe scales the kept units while training); random masks while training."""
    if not c.train:
        c.g.op("Identity", c.x, out=c.y)
        return
    ratio = c.g.scalar(c.p.dropout_param.dropout_ratio, "ratio")
    training = c.g.const(True, "training_mode", bool)
    c.g.multi("Dropout", [c.x, ratio, training], [c.y])


@maps("Silence")
def silence(c: LayerContext) -> None:
    """Nothing: its bottoms are consumed so that they are not outputs."""


@maps("Parameter")
def parameter(c: LayerContext) -> None:
    c.g.op("Identity", c.params[0], out=c.y)
