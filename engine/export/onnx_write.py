"""A :class:`Graph` as an onnx ModelProto, checked by ``onnx.checker`` (the only module importing onnx)."""

from __future__ import annotations

from typing import Any

from engine.export import ExportError, needs
from engine.export.onnx_graph import Graph

OPSET = 18
BATCH = "N"  # the free batch axis' name with --dynamic-batch
# An ONNX file is one protobuf message, which protobuf caps at 2 GiB; 16 MiB are left for the graph.
MAX_WEIGHT_BYTES = 2**31 - 2**24


class TooLarge(ExportError):
    """Weights past what one ONNX file can hold."""


def _size(count: int) -> str:
    value, unit = float(count), "bytes"
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            break
        value /= 1024
    return f"{count} bytes" if unit == "bytes" else f"{value:.1f} {unit}"


def to_model(g: Graph, name: str) -> Any:
    """The checked model; ExportError when its weights are past what one ONNX file can hold."""
    weight_bytes = sum(int(array.nbytes) for array in g.initializers.values())
    if weight_bytes > MAX_WEIGHT_BYTES:
        raise TooLarge(
            f"the weights take {_size(weight_bytes)}, more than one ONNX file can hold (protobuf "
            "caps a file at 2 GiB); the PyTorch module (OUT.py) has no such limit"
        )
    onnx = needs("onnx")
    helper = onnx.helper
    floats = onnx.TensorProto.FLOAT

    def info(value: str, shape: tuple[int, ...], known: bool = True) -> Any:
        dims: list[Any] = list(shape) if known else [None] * len(shape)  # outputs: rank only
        if g.dynamic_batch and dims and known:
            dims[0] = BATCH
        return helper.make_tensor_value_info(value, floats, dims)

    nodes = [helper.make_node(n.op, n.inputs, n.outputs, name=n.name, **n.attrs) for n in g.nodes]
    outputs = [info(value, shape, not g.dynamic_batch) for value, shape in g.outputs]
    graph = helper.make_graph(nodes, name or "net", [info(v, s) for v, s in g.inputs], outputs)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="barista",
        doc_string="exported from a Caffe net by Barista; computes what Caffe computes",
    )  # fmt: skip
    for value, array in g.initializers.items():  # written in place: copying CaffeNet's 240 MB costs seconds
        tensor = model.graph.initializer.add()
        tensor.name, tensor.data_type = value, helper.np_dtype_to_tensor_dtype(array.dtype)
        tensor.dims.extend(array.shape)
        tensor.raw_data = array.tobytes()
    model.ir_version = min(model.ir_version, 9)  # readable by onnxruntime releases of the last years
    onnx.checker.check_model(model, full_check=True)
    return model
