"""The import graph of our own code: layered main -> app -> graph_view -> engine -> proto, no cycles.

Read from the source (every import statement, at any depth: lazy imports inside functions and
``TYPE_CHECKING`` blocks count too), so nothing is imported to check it. ``from pkg import mod``
is an import of ``pkg.mod`` where that is a module of ours, as Python resolves it.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx

REPO = Path(__file__).resolve().parents[2]
LAYERS = ("proto", "engine", "graph_view", "app", "main")  # each may import only those before it


def _modules() -> dict[str, Path]:
    found = {"main": REPO / "main.py"}
    for package in LAYERS[:-1]:
        for path in (REPO / package).rglob("*.py"):
            if path.name == "caffe_pb2.py":  # generated: imports nothing of ours
                continue
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


@functools.cache
def _read() -> nx.DiGraph:
    modules, graph = _modules(), nx.DiGraph()

    def ours(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    for module, path in modules.items():
        graph.add_node(module)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [
                    f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                    for alias in node.names
                ]
            else:
                assert not isinstance(node, ast.ImportFrom), f"{path}: a relative import; write it absolute"
                continue
            for name in names:
                target = ours(name)
                if target is not None and target != module:
                    graph.add_edge(module, target)
    return graph


def _graph() -> nx.DiGraph:
    return _read().copy()


def _layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def test_no_import_runs_against_the_layering():
    graph = _graph()
    assert graph.number_of_nodes() > 200 and graph.number_of_edges() > 500  # it read the tree
    upward = sorted(f"{a} -> {b}" for a, b in graph.edges if _layer(a) < _layer(b))
    assert upward == []
    assert graph.has_edge("app.main_window", "graph_view.editor")  # the layers do talk downwards
    assert graph.has_edge("graph_view.shapes", "engine.layers")


def test_no_cycles_among_our_packages_or_modules():
    graph = _graph()
    packages = nx.DiGraph((a.split(".")[0], b.split(".")[0]) for a, b in graph.edges)
    packages.remove_edges_from(nx.selfloop_edges(packages))
    assert nx.is_directed_acyclic_graph(packages), list(nx.simple_cycles(packages))
    cycles = [set(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == []


def test_a_cycle_or_an_upward_import_would_be_found():
    """The checks are not vacuous: a graph_view module importing app, and back, is caught."""
    graph = _graph()
    graph.add_edge("graph_view.style", "app.layer_families")  # app.layer_families imports graph_view.style
    assert any(_layer(a) < _layer(b) for a, b in graph.edges)
    assert any(len(c) > 1 and "graph_view.style" in c for c in nx.strongly_connected_components(graph))
