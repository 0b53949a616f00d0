"""``main.py draw NET OUT.png|svg [--splits] [--phase P]``: the editor's picture, without a window.

Problems the editor would badge are printed on stderr; the picture is still written (that is when
a picture helps most), and the exit code is then 2 when one of them is an error (as ``main.py
shapes``), 0 for warnings alone. Bad input (no such net, a prototxt that does not parse, an output
that is neither .png nor .svg, a link or a folder at the output) ends with one line on stderr and
exit code 2, nothing written. The output is written as named, bytes that are not UTF-8 included.
"""

from __future__ import annotations

import argparse
import os
import sys


def run(args: argparse.Namespace) -> int:
    ext = os.path.splitext(args.output)[1].lower()
    if ext not in (".png", ".svg"):
        shown = args.output.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        print(f"error: cannot draw to '{shown}': the output must end in .png or .svg", file=sys.stderr)
        return 2
    from graph_view.cli_shapes import check_typed, input_shapes
    from proto.textio import read_net

    typed = input_shapes(getattr(args, "input_shape", None))
    net = read_net(args.net)  # OSError / FormatError: main prints them
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from graph_view import render
    from graph_view.graph import box_count
    from graph_view.validation import ERROR
    from proto import caffe_pb2

    app = QApplication.instance() or QApplication(["main.py draw"])  # noqa: F841  (kept for the render)
    phase = caffe_pb2.TEST if str(getattr(args, "phase", "TRAIN")).upper() == "TEST" else caffe_pb2.TRAIN
    splits = bool(getattr(args, "splits", False))
    try:
        render.check_boxes(box_count(net, phase), args.net)  # before a scene is made for it
        scene = render.make_scene(net, os.path.abspath(args.net), phase, splits, typed)
        check_typed(scene.graph, typed)  # before anything is written
        problems = scene.problems
        size = render.save(scene, args.output, title=net.name)
    except render.PictureTooLarge as exc:
        print(f"error: cannot draw {args.output}: {exc}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"{problem.severity}: {problem.name}: {problem.message}", file=sys.stderr)
    graph = scene.graph
    print(
        f"Wrote {render.shown(args.output)} ({size.width()}x{size.height()}): {len(graph.layers)} layers, "
        f"{len(graph.nodes)} boxes, {len(scene.problems)} problem{'s' * (len(scene.problems) != 1)}"
    )
    return 2 if any(p.severity == ERROR for p in scene.problems) else 0
