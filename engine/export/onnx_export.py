"""`main.py export NET.prototxt OUT.onnx`: the net, with its weights (or its fillers' seeded values),
as an ONNX model whose inputs and outputs carry the Caffe blob names."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine import rng
from engine.cli.common import read_net, read_weights
from engine.export import ExportError
from engine.export.onnx_walk import build_graph
from engine.export.onnx_write import TooLarge, to_model
from engine.net import Net
from proto import caffe_pb2
from proto.atomic import write_bytes_atomic

SEED = 1  # the fillers' seed when no weights are given (as `main.py fill`'s default)


def net_model(net: Net, dynamic_batch: bool = False) -> Any:
    """The built engine Net (its parameters as they are now) as a checked onnx ModelProto."""
    return to_model(build_graph(net, dynamic_batch), net.name)


def export_onnx(
    net_path: str,
    out_path: str,
    weights: str | None = None,
    phase: int = caffe_pb2.TEST,
    dynamic_batch: bool = False,
) -> str:
    copy_weights = read_weights(weights) if weights else None
    with rng.seeded(SEED):
        net = Net(read_net(net_path), phase=phase, xp=np)
    if copy_weights:
        copy_weights(net)
    try:
        model = net_model(net, dynamic_batch)
    except TooLarge as exc:
        raise ExportError(f"{net_path}: {exc}") from exc
    except ExportError:
        raise
    except Exception as exc:  # a mapping that wrote a bad graph: onnx.checker's ValidationError, or worse
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        checker = type(exc).__module__.startswith("onnx")
        what = "failed onnx.checker" if checker else f"could not be built ({type(exc).__name__})"
        raise ExportError(f"{net_path}: the ONNX model {what}: {first}") from exc
    write_bytes_atomic(out_path, model.SerializeToString())
    graph = model.graph
    names = lambda values: ", ".join(v.name for v in values)  # noqa: E731
    return (
        f"wrote {out_path}: opset {model.opset_import[0].version}, {len(graph.node)} nodes, "
        f"inputs {names(graph.input)}, outputs {names(graph.output)}"
    )
