"""``main.py shapes NET [--phase P] [--splits] [--input-shape BLOB=N,C,H,W ...]``: the canvas as text.

One line per layer (in-place layers included, in file order): name, type, top shapes, learned
parameters, forward FLOPs per image, exactly what the editor's boxes and wires show, because it is
the editor's own ``graph.build`` with the same data hints (the shapes recorded in the layout sidecar,
a deploy net beside the file, the layer's own fields; ``--input-shape`` as typed in the inspector).
A shape that rests on an assumption instead of the data is marked ``*`` and explained below the
table; an unknown one is ``?``. Warnings go to stderr, as ``main.py draw`` prints them. Exit code 2
when a problem is an error (a layer that cannot be shaped, an unknown type, a missing bottom), after
the table; warnings alone (data not read, shapes assumed) leave it 0. Qt-free.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from engine.data_shapes import Hints, Shape, parse_shape, reads_source
from engine.errors import EngineError
from graph_view import sidecar
from graph_view.graph import Graph, build
from proto import caffe_pb2

UNKNOWN = "?"


def input_shapes(values: Sequence[str] | None) -> dict[str, Shape]:
    """``["data=32,3,224,224", ...]`` as {blob: shape}; EngineError names a malformed one."""
    shapes: dict[str, Shape] = {}
    for value in values or ():
        blob, sep, dims = value.partition("=")
        if not sep or not blob.strip():
            raise EngineError(f"--input-shape {value}: give it as BLOB=N,C,H,W (e.g. data=32,3,224,224)")
        try:
            shapes[blob.strip()] = parse_shape(dims)
        except ValueError as exc:
            raise EngineError(f"--input-shape {value}: {exc}") from None
    return shapes


def check_typed(graph: Graph, typed: dict[str, Shape]) -> None:
    """EngineError naming the first ``--input-shape`` blob that no data layer of ``graph`` makes
    (the shape would be ignored: only a data layer whose source is absent takes one), and the ones
    that are."""
    data = list(dict.fromkeys(t for layer in graph.layers.values() if reads_source(layer) for t in layer.top))
    net = f"the {_phase(graph.phase)} net"
    for blob in typed:
        if blob in data:
            continue
        if not data:
            raise EngineError(
                f"--input-shape {blob}: {net} has no Data, ImageData, HDF5Data or WindowData layer to "
                "take a shape (an Input layer's shape is in its input_param)"
            )
        known = ", ".join(data)
        raise EngineError(
            f"--input-shape {blob}: '{blob}' is not a data blob of {net} (its data blobs: {known})"
        )


def hints_for(net_path: str, typed: dict[str, Shape]) -> Hints:
    """The hints the canvas uses for the net at ``net_path``, with ``typed`` over the sidecar's."""
    state = sidecar.load(net_path)
    recorded = dict(state.data_shapes) if state is not None else {}
    assumed = dict(state.input_shapes) if state is not None else {}
    return Hints({**assumed, **typed}, recorded, os.path.abspath(net_path))


def table(graph: Graph) -> list[str]:
    rows = [("name", "type", "tops", "params", "FLOPs")]
    for key, layer in graph.layers.items():
        shapes = graph.shapes[key]
        mark = "*" if shapes.assumed is not None else ""
        tops = ",".join(_dims(s, mark) for s in shapes.tops) or "-"
        node = graph.nodes.get(key)
        band = graph.band(key) if node is None else None
        owner = node if node is not None else band
        params = owner.params if owner is not None else 0
        flops = owner.flops if owner is not None else 0.0
        rows.append((key, layer.type, tops, str(params), f"{flops:.0f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [
        f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]:>12}  {r[4]:>14}" for r in rows
    ]
    lines.append(f"total: {graph.total_params} params, {graph.total_flops:.0f} FLOPs per image")
    for key, assumption in graph.assumed.items():
        lines.append(f"* {key}: {assumption.describe()}")
    return lines


def _dims(shape: Shape | None, mark: str) -> str:
    if shape is None:
        return UNKNOWN
    return ("x".join(str(d) for d in shape) if shape else "scalar") + mark


def run(args: argparse.Namespace) -> int:
    from graph_view.validation import WARNING, validate
    from proto.textio import read_net

    typed = input_shapes(getattr(args, "input_shape", None))
    net = read_net(args.net)  # OSError / FormatError: main prints them
    phase = caffe_pb2.TEST if str(getattr(args, "phase", "TRAIN")).upper() == "TEST" else caffe_pb2.TRAIN
    # Python layers' modules are not imported from the net's folder here (opening never runs code).
    graph = build(net, phase, bool(getattr(args, "splits", False)), (), hints_for(args.net, typed))
    check_typed(graph, typed)
    errors = 0
    for problem in validate(graph):
        kind = "warning" if problem.severity == WARNING else "error"
        errors += kind == "error"
        print(f"{kind}: {problem.name}: {problem.message}", file=sys.stderr)
    print("\n".join(table(graph)))
    return 2 if errors else 0  # the table is printed either way; a script can tell a net Caffe refuses


def _phase(phase: int) -> str:
    return caffe_pb2.Phase.Name(phase)
