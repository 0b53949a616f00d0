"""Caffe's InsertSplits: give every blob consumed more than once a Split layer of its own.

A top used by k > 1 bottoms (a nonzero explicit loss_weight on it counts as one more use) gets a
layer ``{blob}_{layer}_{top index}_split`` with tops ``{blob}_{layer}_{top index}_split_{i}``, and
each consumer is rewired to its own split top, in layer order. A loss weight moves to the split's
first top (0 on the others) and is cleared on the producer, whose rewired consumers then start at
split top 1. The deprecated net-level ``input`` blobs count as tops of a layer named "input".
"""

from __future__ import annotations

from collections import defaultdict

from engine.errors import NetError
from proto import caffe_pb2


def split_layer_name(layer_name: str, blob_name: str, top_index: int) -> str:
    return f"{blob_name}_{layer_name}_{top_index}_split"


def split_blob_name(layer_name: str, blob_name: str, top_index: int, split_index: int) -> str:
    return f"{blob_name}_{layer_name}_{top_index}_split_{split_index}"


def insert_splits(param: caffe_pb2.NetParameter) -> caffe_pb2.NetParameter:
    # A top is (layer index, top index); the deprecated net-level ``input`` blobs are tops of layer -1,
    # named "input", and their splits come before every layer.
    last_producer: dict[str, tuple[int, int]] = {blob: (-1, j) for j, blob in enumerate(param.input)}
    source_of_bottom: dict[tuple[int, int], tuple[int, int]] = {}
    uses: dict[tuple[int, int], int] = defaultdict(int)
    loss_weight: dict[tuple[int, int], float] = {}
    for i, layer in enumerate(param.layer):
        for j, blob in enumerate(layer.bottom):
            if blob not in last_producer:
                raise NetError(f"Unknown bottom blob '{blob}' (layer '{layer.name}', bottom index {j})")
            source_of_bottom[(i, j)] = last_producer[blob]
            uses[last_producer[blob]] += 1
        for j, blob in enumerate(layer.top):
            last_producer[blob] = (i, j)
        for j in range(min(len(layer.loss_weight), len(layer.top))):
            top = last_producer[layer.top[j]]
            loss_weight[top] = layer.loss_weight[j]
            if loss_weight[top]:
                uses[top] += 1

    def producer_name(layer_index: int) -> str:
        return "input" if layer_index < 0 else param.layer[layer_index].name

    out = caffe_pb2.NetParameter()
    out.CopyFrom(param)
    del out.layer[:]
    for j, blob in enumerate(param.input):
        if uses[(-1, j)] > 1:
            _add_split(out, "input", blob, j, uses[(-1, j)], 0.0)
    next_split: dict[tuple[int, int], int] = defaultdict(int)
    for i, source in enumerate(param.layer):
        layer = out.layer.add()
        layer.CopyFrom(source)
        for j, blob in enumerate(layer.bottom):
            top = source_of_bottom[(i, j)]
            if uses[top] > 1:
                layer.bottom[j] = split_blob_name(producer_name(top[0]), blob, top[1], next_split[top])
                next_split[top] += 1
        for j, blob in enumerate(layer.top):
            count = uses[(i, j)]
            if count <= 1:
                continue
            weight = loss_weight.get((i, j), 0.0)
            _add_split(out, layer.name, blob, j, count, weight)
            if weight:
                del layer.loss_weight[:]
                next_split[(i, j)] += 1
    return out


def _add_split(
    out: caffe_pb2.NetParameter, producer: str, blob: str, top_index: int, count: int, weight: float
) -> None:
    """A Split layer copying ``blob`` to ``count`` tops; a loss weight goes to the first top only."""
    split = out.layer.add(name=split_layer_name(producer, blob, top_index), type="Split")
    split.bottom.append(blob)
    for k in range(count):
        split.top.append(split_blob_name(producer, blob, top_index, k))
        if weight:
            split.loss_weight.append(weight if k == 0 else 0.0)
