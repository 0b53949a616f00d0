"""Walking a built engine Net into a :class:`Graph`, layer by layer in Caffe's order.

Caffe's blobs may be written more than once (in-place layers); ONNX values are written once. Each
write gets its own value: the last write of a blob carries the blob's own name (so the graph's
outputs are named as Caffe names them), earlier ones ``NAME@K``; an input blob keeps its name for the
graph input. Split layers (InsertSplits') become Identity nodes.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from engine import backend
from engine.export import not_exportable, onnx_layers  # noqa: F401  (registers every mapping)
from engine.export.onnx_context import MAPPINGS, LayerContext
from engine.export.onnx_graph import Graph
from engine.export.onnx_inputs import DATA_TYPES
from engine.net import Net


def build_graph(net: Net, dynamic_batch: bool = False) -> Graph:
    g = Graph(dynamic_batch=dynamic_batch)
    g.used.update(net.blob_names)
    writes = Counter(tid for tops in net.top_id_vecs for tid in tops)
    inputs = {
        tid
        for i, tops in enumerate(net.top_id_vecs)
        if net.layers[i].param.type in DATA_TYPES
        for tid in tops
    }
    done: Counter[int] = Counter()
    current: dict[int, str] = {}
    params: dict[tuple[int, tuple[int, ...]], str] = {}

    def name_write(tid: int) -> str:
        blob, k = net.blob_names[tid], done[tid]
        done[tid] += 1
        plain = k == 0 if tid in inputs else k == writes[tid] - 1
        if plain:
            return blob
        return g.fresh(f"{blob}@{k}")

    for i, layer in enumerate(net.layers):
        g.layer = layer.param.name
        kind = layer.param.type
        mapping = MAPPINGS.get(kind)
        if mapping is None:
            why = not_exportable.because(not_exportable.ONNX, kind)
            raise LayerContext(g, layer, [], [], [], [], [], []).refuse(
                f"this layer type has no ONNX equivalent here{why}; remove it or replace it before exporting"
            )
        bottoms = [current[b] for b in net.bottom_id_vecs[i]]
        tops = [name_write(t) for t in net.top_id_vecs[i]]
        arrays = [backend.to_host(b.data).astype(np.float32) for b in layer.blobs]
        names = []
        for j, blob in enumerate(layer.blobs):
            # Parameters shared by name (param { name }) are one initializer, their owner's.
            pid = net.param_id_vecs[i][j] if j < len(net.param_id_vecs[i]) else -1 - len(params)
            owner = net.param_owners[pid] if pid >= 0 and net.param_owners[pid] >= 0 else pid
            key = (owner, blob.shape)  # (PERMISSIVE sharing may view the values in another shape)
            if key not in params:
                params[key] = g.const(arrays[j], f"{j}")
            names.append(params[key])
        c = LayerContext(
            g, layer, bottoms, tops,
            [net.blob_list[b].shape for b in net.bottom_id_vecs[i]],
            [net.blob_list[t].shape for t in net.top_id_vecs[i]],
            names, arrays,
        )  # fmt: skip
        mapping(c)
        for tid, name in zip(net.top_id_vecs[i], tops):
            current[tid] = name
    for tid in net.output_blob_indices:
        g.outputs.append((current[tid], net.blob_list[tid].shape))
    return g
