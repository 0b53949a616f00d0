"""The graph editor at scale: a generated ResNet-152 (671 layers) opened, laid out and drawn.

    python -m bench.graph_scale [--batch 32] [--repeat 3]

Times, best of ``--repeat``: parsing the prototxt; deriving the graph (phase filter, shape inference,
validation); the layout; creating the scene's items; the first paint of the fitted view; and then
panning at 1:1 zoom and at fit zoom (one frame = scroll by a fifth of the viewport and repaint it).
The target is open + layout + draw under a second, and pan frames well under 16 ms.
"""

from __future__ import annotations

import argparse
import os
import time

from proto import caffe_pb2

STAGES = ((3, 64), (8, 128), (36, 256), (3, 512))  # ResNet-152: bottleneck blocks per stage, width


def resnet152(batch: int = 1) -> caffe_pb2.NetParameter:
    """ResNet-152 as Caffe writes it: Convolution + BatchNorm + Scale (+ ReLU) in place, Eltwise SUM."""
    net = caffe_pb2.NetParameter(name="ResNet-152")

    def add(name: str, kind: str, bottoms: list[str], tops: list[str]) -> caffe_pb2.LayerParameter:
        layer = net.layer.add(name=name, type=kind)
        layer.bottom.extend(bottoms)
        layer.top.extend(tops)
        return layer

    def conv_bn(name: str, bottom: str, width: int, kernel: int, stride: int, relu: bool = True) -> str:
        p = add(name, "Convolution", [bottom], [name]).convolution_param
        p.num_output, p.bias_term = width, False
        p.kernel_size.append(kernel)
        p.stride.append(stride)
        p.pad.append(kernel // 2)
        p.weight_filler.type = "msra"
        add(f"bn_{name}", "BatchNorm", [name], [name])
        add(f"scale_{name}", "Scale", [name], [name]).scale_param.bias_term = True
        if relu:
            add(f"{name}_relu", "ReLU", [name], [name])
        return name

    add("data", "Input", [], ["data"]).input_param.shape.add().dim.extend([batch, 3, 224, 224])
    conv_bn("conv1", "data", 64, 7, 2)
    pool = add("pool1", "Pooling", ["conv1"], ["pool1"]).pooling_param
    pool.pool, pool.kernel_size, pool.stride = caffe_pb2.PoolingParameter.MAX, 3, 2
    x = "pool1"
    for stage, (blocks, width) in enumerate(STAGES, start=2):
        for block in range(blocks):
            name = f"res{stage}a" if block == 0 else f"res{stage}b{block}"
            stride = 2 if block == 0 and stage > 2 else 1
            shortcut = conv_bn(f"{name}_branch1", x, width * 4, 1, stride, relu=False) if block == 0 else x
            y = conv_bn(f"{name}_branch2a", x, width, 1, stride)
            y = conv_bn(f"{name}_branch2b", y, width, 3, 1)
            y = conv_bn(f"{name}_branch2c", y, width * 4, 1, 1, relu=False)
            add(name, "Eltwise", [shortcut, y], [name])
            add(f"{name}_relu", "ReLU", [name], [name])
            x = name
    pool = add("pool5", "Pooling", [x], ["pool5"]).pooling_param
    pool.pool, pool.global_pooling = caffe_pb2.PoolingParameter.AVE, True
    add("fc1000", "InnerProduct", ["pool5"], ["fc1000"]).inner_product_param.num_output = 1000
    add("prob", "Softmax", ["fc1000"], ["prob"])
    return net


def _best(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def measure(batch: int = 32, repeat: int = 3) -> dict[str, float]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from graph_view import graph as graph_mod
    from graph_view.editor import GraphEditor
    from graph_view.shapes import _CACHE
    from graph_view.validation import validate
    from proto.textio import net_to_text, parse_net

    app = QApplication.instance() or QApplication([])
    text = net_to_text(resnet152(batch))
    times: dict[str, float] = {"layers": float(text.count("layer {"))}
    times["parse"], net = _best(lambda: parse_net(text), repeat)

    def derive():
        _CACHE.clear()  # a cold open: no set-up results from before
        g = graph_mod.build(net)
        return g, validate(g)

    times["derive"], _ = _best(derive, repeat)

    class Doc:  # the least a document is: a net, a path, a change signal
        def __init__(self) -> None:
            from PySide6.QtCore import QObject, Signal

            class Changed(QObject):
                changed = Signal(object)

            self._signal = Changed()
            self.changed = self._signal.changed
            self.net, self.net_path = net, None

    def open_and_draw():
        _CACHE.clear()
        editor = GraphEditor(Doc())
        editor.resize(1400, 900)
        editor.show()
        editor.sync()
        editor.view.viewport().repaint()
        return editor

    times["open+layout+draw"], editor = _best(open_and_draw, repeat)
    scene = editor.scene
    times["boxes"], times["wires"] = float(len(scene.nodes)), float(len(scene.wires))
    sizes = {k: (n.width, n.height) for k, n in scene.nodes.items()}

    def lay_out():
        scene._layout_key = None  # no cached layout
        return scene._lay_out(sizes)

    times["layout"], _ = _best(lay_out, repeat)
    times["open total (parse + open, layout, draw)"] = times["parse"] + times["open+layout+draw"]
    conv = next(layer for layer in net.layer if layer.name == "res4b10_branch2b").convolution_param

    def edit_and_redraw():  # what one edit costs: derive again, keep the layout, new items, repaint
        conv.num_output = 256 if conv.num_output == 257 else 257
        editor.schedule()
        editor.sync()
        editor.view.viewport().repaint()

    times["edit -> redraw"], _ = _best(edit_and_redraw, repeat)
    times["pan frame, fit zoom"] = _pan(editor, app)
    editor.view.zoom_by(1.0 / editor.view.zoom())
    editor.view.centerOn(scene.nodes["res4b10"])
    times["pan frame, 1:1"] = _pan(editor, app)
    times.update(_draw(net, repeat))
    return times


def _draw(net: caffe_pb2.NetParameter, repeat: int) -> dict[str, float]:
    """``main.py draw`` without the process start: the scene built and written as PNG, for this net
    and for a five-layer one (the difference is what the net's size costs; target well under 1 s)."""
    import tempfile

    from graph_view import render

    small = caffe_pb2.NetParameter(name="five")
    small.layer.add(name="data", type="Input", top=["x"]).input_param.shape.add().dim.extend([1, 3, 8, 8])
    for i in range(1, 5):
        small.layer.add(name=f"relu{i}", type="ReLU", bottom=["x"], top=[f"x{i}"])
        small.layer[-1].bottom[0] = "x" if i == 1 else f"x{i - 1}"
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, which in (("draw PNG, 5 layers", small), ("draw PNG, ResNet-152", net)):
            path = os.path.join(folder, "net.png")
            times[name], _ = _best(lambda n=which, p=path: render.save(render.make_scene(n), p), repeat)
    times["draw PNG, ResNet-152 beyond 5 layers"] = (
        times["draw PNG, ResNet-152"] - times["draw PNG, 5 layers"]
    )
    return times


def _pan(editor, app, frames: int = 30) -> float:
    bar = editor.view.verticalScrollBar()
    step = max(editor.view.viewport().height() // 5, 1)
    app.processEvents()
    start = time.perf_counter()
    for i in range(frames):
        bar.setValue(bar.value() + (step if i % 20 < 10 else -step))
        editor.view.viewport().repaint()
    return (time.perf_counter() - start) / frames


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    for name, value in measure(args.batch, args.repeat).items():
        unit = "" if name in ("layers", "boxes", "wires") else " ms"
        print(f"{name:>40}: {value * (1 if not unit else 1000):8.1f}{unit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
