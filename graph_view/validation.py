"""What is wrong with the net, per layer, in words a designer can act on. Qt-free.

Checks: layer types nobody registered, bottoms nothing produces (or produces only later: Caffe
runs layers in file order), tops produced twice, cycles, include/exclude rules that clash, and
whatever the engine's own set-up refused (shape mismatches, bad parameters). A data layer that
cannot read its source is a warning: the net is fine, its shapes are assumed (saying from what)
or, when nothing says them, unknown (saying how to give them). So is a mean file that cannot be read.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from engine import data_shapes
from engine.layers import find_layer_class
from graph_view.graph import Graph
from proto.caffe_pb2 import LayerParameter

ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Problem:
    severity: str
    key: str  # the node or band it belongs to
    index: int | None  # the document's layer index, if the layer is the document's
    message: str

    @property
    def name(self) -> str:
        return self.key.split("#")[0]


def _phase_name(graph: Graph) -> str:
    return "TEST" if graph.phase == 1 else "TRAIN"


def _cycles(graph: Graph) -> list[list[str]]:
    g = nx.DiGraph()
    g.add_edges_from((e.src, e.dst) for e in graph.edges)
    found = [
        sorted(c, key=list(graph.nodes).index) for c in nx.strongly_connected_components(g) if len(c) > 1
    ]
    found += [[e.src] for e in graph.edges if e.src == e.dst]
    return found


def _bottoms_needed(layer: LayerParameter) -> int:
    cls = find_layer_class(layer.type)
    return cls.bottoms_needed(layer) if cls is not None else 0


def validate(graph: Graph) -> list[Problem]:
    problems: list[Problem] = []

    def add(key: str, message: str, severity: str = ERROR) -> None:
        problems.append(Problem(severity, key, graph.index_of(key), message))

    phase = _phase_name(graph)
    for key, message in graph.rule_errors.items():
        add(key, message)
    unknown = set()
    for key, layer in graph.layers.items():
        node = graph.nodes.get(key)
        if node is not None and not node.known:
            unknown.add(key)
            add(key, f"unknown layer type '{layer.type}'")
    for key, _slot, blob in graph.dangling:
        add(key, f"bottom '{blob}' is not produced by any layer in {phase}")
    for edge in graph.edges:
        if edge.late:
            add(
                edge.dst,
                f"bottom '{edge.blob}' comes from '{graph.nodes[edge.src].layer.name}', "
                "which runs later: Caffe runs layers in file order",
            )
    for key, blob, first in graph.twice:
        add(key, f"top '{blob}' is already produced by '{graph.layers[first].name}'")
    for cycle in _cycles(graph):
        path = " → ".join(graph.layers[k].name for k in [*cycle, cycle[0]])
        for key in cycle:
            add(key, f"part of a cycle: {path}")
    if graph.split_error:
        first = next(iter(graph.nodes), None)  # type: ignore[assignment]
        if first is not None:
            add(first, f"cannot insert splits: {graph.split_error}")
    for key, layer in graph.layers.items():
        needed = _bottoms_needed(layer)
        if key not in unknown and len(layer.bottom) < needed:
            if not layer.bottom:
                add(key, "not connected: drag a top port onto it")
            else:
                add(key, f"needs {needed} bottoms, has {len(layer.bottom)}")
    reported = {p.key for p in problems}
    for key, shapes in graph.shapes.items():
        if shapes.error and key not in unknown and (key not in reported or shapes.data_error):
            if shapes.data_error:
                add(key, _data_warning(graph, key), WARNING)
            else:
                add(key, shapes.error)
    for key, shapes in graph.shapes.items():
        for note in shapes.notes:
            add(key, note, WARNING)
    return problems


def _data_warning(graph: Graph, key: str) -> str:
    """The source's problem in full, then what the shapes rest on (or how to give them)."""
    shapes, layer = graph.shapes[key], graph.layers[key]
    assumed = shapes.assumed
    if assumed is not None and assumed.complete:
        return f"data not read ({shapes.error}): shapes {assumed.describe()}"
    if assumed is not None and any(s is not None for s in assumed.tops):
        known = ", ".join(t for t, s in zip(layer.top, assumed.tops) if s is not None)
        return (
            f"data not read ({shapes.error}): {known} {assumed.describe()}; for the rest "
            f"{data_shapes.how_to_give(layer)}"
        )
    said = f" ({assumed.reason} say too little)" if assumed is not None else ""
    return f"shapes unknown{said}: {shapes.error}; {data_shapes.how_to_give(layer)}"
