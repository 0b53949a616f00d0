"""A :class:`Graph` as an onnx ModelProto, checked by ``onnx.checker`` (the only module importing onnx)."""

from __future__ import annotations

from typing import Any

from engine.export import needs
from engine.export.onnx_graph import Graph

OPSET = 18
BATCH = "N"  # the free batch axis' name with --dynamic-batch


def to_model(g: Graph, name: str) -> Any:
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
