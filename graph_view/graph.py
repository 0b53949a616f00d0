"""The picture's facts, derived from the document's net: nodes, in-place bands, wires, shapes. Qt-free.

Nothing here is stored: ``build`` is rerun from the NetParameter after every edit. It filters the
net by phase (Caffe's FilterNet), optionally applies InsertSplits (the split overlay), runs shape
inference, and groups each in-place layer (ReLU on ``conv1`` -> ``conv1``) as a band of the box
that produced its blob. A bottom is wired, as Caffe resolves it, to the last producer of that blob
*before* the layer; failing that to a later producer (an ordering mistake, flagged), else dangling.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine import data_shapes
from engine.data_shapes import Hints
from engine.errors import EngineError
from engine.insert_splits import insert_splits
from engine.layers import layer_types
from engine.netstate import layer_included, make_state
from graph_view.flops import forward_flops
from graph_view.shapes import LayerShapes, Shape, infer
from proto import caffe_pb2

LayerParameter = caffe_pb2.LayerParameter
PHASES = {"TRAIN": caffe_pb2.TRAIN, "TEST": caffe_pb2.TEST}
# Statistics, not weights: Caffe fixes their lr_mult at 0, so they do not count as parameters.
_NOT_LEARNED = {"BatchNorm"}


@dataclass
class Band:
    """An in-place layer, drawn as a strip of its producer's box."""

    key: str
    index: int | None
    layer: LayerParameter
    blob: str
    params: int = 0
    flops: float = 0.0


@dataclass
class Node:
    key: str
    index: int | None  # the document's layer index; None for a Split that Caffe generates
    layer: LayerParameter
    generated: bool = False
    known: bool = True  # a registered layer type
    bands: list[Band] = field(default_factory=list)
    top_shapes: list[Shape | None] = field(default_factory=list)
    params: int = 0
    flops: float = 0.0
    assumed: data_shapes.Assumption | None = None  # its shapes rest on an assumption, not on its data

    @property
    def bottoms(self) -> list[str]:
        return list(self.layer.bottom)

    @property
    def tops(self) -> list[str]:
        return list(self.layer.top)


@dataclass
class Edge:
    src: str
    src_slot: int
    dst: str
    dst_slot: int
    blob: str
    shape: Shape | None
    late: bool = False  # the producer runs after the consumer


@dataclass
class Graph:
    phase: int
    splits: bool
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    dangling: list[tuple[str, int, str]] = field(default_factory=list)  # (node key, bottom slot, blob)
    twice: list[tuple[str, str, str]] = field(default_factory=list)  # (node key, top, first producer key)
    host: dict[str, str] = field(default_factory=dict)  # node or band key -> the box it is drawn in
    bands: dict[str, Band] = field(default_factory=dict)  # band key -> its band (a box's list is in order)
    keys_of_index: dict[int, str] = field(default_factory=dict)
    shapes: dict[str, LayerShapes] = field(default_factory=dict)  # node or band key -> set-up result
    layers: dict[str, LayerParameter] = field(default_factory=dict)  # node or band key -> layer
    rule_errors: dict[str, str] = field(default_factory=dict)
    split_error: str | None = None
    total_params: int = 0
    total_flops: float = 0.0
    # data layers whose source was read: data_shapes.record_key -> their top shapes (for the sidecar)
    read_shapes: dict[str, list[Shape]] = field(default_factory=dict)

    @property
    def assumed(self) -> dict[str, data_shapes.Assumption]:
        """Node or band key -> the assumption its data shapes rest on (data not read)."""
        return {k: s.assumed for k, s in self.shapes.items() if s.assumed is not None}

    def index_of(self, key: str) -> int | None:
        node = self.nodes.get(key)
        if node is not None:
            return node.index
        band = self.band(key)
        return band.index if band is not None else None

    def band(self, key: str) -> Band | None:
        return self.bands.get(key)  # a dict: a search of the host's list made 50k in-place layers quadratic


def _visible(
    net: caffe_pb2.NetParameter, phase: int
) -> tuple[list[tuple[int, LayerParameter]], dict[int, str]]:
    state = make_state(phase, net.state.level, net.state.stage)
    kept, errors = [], {}
    for i, layer in enumerate(net.layer):
        try:
            included = layer_included(layer, state)
        except EngineError as exc:
            included, errors[i] = True, str(exc)
        if included:
            kept.append((i, layer))
    return kept, errors


def _with_splits(kept: list[tuple[int, LayerParameter]]) -> list[tuple[int | None, LayerParameter]]:
    """InsertSplits on the kept layers, each output layer tagged with its document index."""
    filtered = caffe_pb2.NetParameter()
    for _, layer in kept:
        filtered.layer.add().CopyFrom(layer)
    out: list[tuple[int | None, LayerParameter]] = []
    source = 0
    for layer in insert_splits(filtered).layer:
        original = kept[source][1] if source < len(kept) else None
        if original is not None and layer.name == original.name and layer.type == original.type:
            out.append((kept[source][0], layer))
            source += 1
        else:
            out.append((None, layer))  # a Split layer Caffe adds
    return out


def _in_place(layer: LayerParameter) -> bool:
    return len(layer.bottom) == 1 and list(layer.top) == list(layer.bottom)


def box_count(net: caffe_pb2.NetParameter, phase: int = caffe_pb2.TRAIN) -> int:
    """About how many boxes ``build`` draws, counted without shapes: the layers ``phase`` keeps that
    are not in place (those become bands of their producer's box; Split boxes not counted)."""
    return sum(1 for _, layer in _visible(net, phase)[0] if not _in_place(layer))


def _learned(layer: LayerParameter, shapes: LayerShapes) -> int:
    return 0 if layer.type in _NOT_LEARNED else shapes.param_count


def build(
    net: caffe_pb2.NetParameter,
    phase: int = caffe_pb2.TRAIN,
    splits: bool = False,
    module_dirs: Sequence[str] = (),
    hints: Hints | None = None,
) -> Graph:
    """``module_dirs``: where Python layers' modules are looked for first (the net's folder);
    ``hints``: shapes for data layers whose source is absent (``engine.data_shapes``)."""
    graph = Graph(phase, splits)
    kept, rule_errors = _visible(net, phase)
    layers: list[tuple[int | None, LayerParameter]] = list(kept)
    if splits:
        try:
            layers = _with_splits(kept)
        except EngineError as exc:
            graph.split_error = str(exc)
    results = infer([layer for _, layer in layers], phase, module_dirs, hints)
    known = set(layer_types())
    names = Counter[str]()
    producer: dict[str, tuple[str, int]] = {}  # blob -> (node key, top slot) as of now
    current: dict[str, Shape | None] = {}  # blob -> its shape as of now
    later: dict[str, tuple[str, int]] = {}  # blob -> first producer, for bottoms that come too early
    pending: list[tuple[str, int, str]] = []
    shared_seen: set[str] = set()

    for index, layer in layers:
        names[layer.name] += 1
        key = layer.name if names[layer.name] == 1 else f"{layer.name}#{names[layer.name]}"
        shapes = results[len(graph.layers)]
        graph.layers[key], graph.shapes[key] = layer, shapes
        if data_shapes.reads_source(layer) and not shapes.error and None not in shapes.tops:
            graph.read_shapes[data_shapes.record_key(layer, phase)] = [
                s for s in shapes.tops if s is not None
            ]
        if index is not None:
            graph.keys_of_index[index] = key
            if index in rule_errors:
                graph.rule_errors[key] = rule_errors[index]
        bottom_shapes = [current.get(b) for b in layer.bottom]
        flop_count = forward_flops(layer, bottom_shapes, shapes.tops, shapes.params)
        params = _learned(layer, shapes)
        graph.total_flops += flop_count
        for slot, size in enumerate(shapes.params):
            spec = layer.param[slot] if slot < len(layer.param) else None
            if spec is not None and spec.name:
                if spec.name in shared_seen:
                    continue
                shared_seen.add(spec.name)
            if layer.type not in _NOT_LEARNED:
                graph.total_params += math.prod(size)

        if _in_place(layer) and layer.bottom[0] in producer and index is not None:
            host, _slot = producer[layer.bottom[0]]
            band = Band(key, index, layer, layer.bottom[0], params, flop_count)
            graph.nodes[host].bands.append(band)
            graph.bands[key] = band
            graph.host[key] = host
            if shapes.tops and shapes.tops[0] is not None:
                current[layer.bottom[0]] = shapes.tops[0]
            continue

        node = Node(key, index, layer, generated=index is None, known=layer.type in known)
        node.top_shapes, node.params, node.flops = list(shapes.tops), params, flop_count
        node.assumed = shapes.assumed
        graph.nodes[key] = node
        graph.host[key] = key
        for slot, blob in enumerate(layer.bottom):
            if blob in producer:
                src, src_slot = producer[blob]
                graph.edges.append(Edge(src, src_slot, key, slot, blob, current.get(blob)))
            else:
                pending.append((key, slot, blob))
        for slot, blob in enumerate(layer.top):
            in_place = slot < len(layer.bottom) and layer.bottom[slot] == blob
            if blob in producer and not in_place:
                graph.twice.append((key, blob, producer[blob][0]))
            producer[blob] = (key, slot)
            later.setdefault(blob, (key, slot))
            current[blob] = shapes.tops[slot] if slot < len(shapes.tops) else None

    for key, slot, blob in pending:
        if blob in later and later[blob][0] != key:
            src, src_slot = later[blob]
            graph.edges.append(Edge(src, src_slot, key, slot, blob, current.get(blob), late=True))
        else:
            graph.dangling.append((key, slot, blob))
    return graph
