"""The status bar's totals belong to the net on screen: opening another net never leaves the last
net's figures standing while the new ones are measured."""

from __future__ import annotations

import tracemalloc

from app.files import EXAMPLES
from app.main_window import MainWindow
from app.net_stats import net_totals
from graph_view import summary
from proto.textio import parse_net

MLP = """name: "mlp"
layer { name: "data" type: "Input" top: "x" input_param { shape { dim: 2 dim: 5 } } }
layer { name: "fc" type: "InnerProduct" bottom: "x" top: "fc" inner_product_param { num_output: 3 } }
"""


def test_opening_another_net_clears_the_last_nets_totals_until_its_own_arrive(qtbot, tmp_path):
    window = MainWindow()
    qtbot.addWidget(window)
    status = window.workbench.totals
    assert window.open_file(EXAMPLES / "mnist" / "lenet.prototxt")
    qtbot.waitUntil(lambda: status.totals is not None and status.totals.params == 431080, timeout=30000)
    net = tmp_path / "mlp.prototxt"
    net.write_text(MLP)
    assert window.open_file(net)
    assert status.totals is None and status.text() == "measuring…"  # at once, not after the pause
    qtbot.waitUntil(lambda: status.totals is not None, timeout=30000)
    assert status.totals.params == 18 and status.text().startswith("18 params")


def test_the_status_bar_and_the_canvas_give_one_count(qtbot, lenet_window):
    """#27 case 1: the status bar (a whole Net built) and the boxes (graph_view/flops) disagreed on
    LeNet's FLOPs (294,746,880 vs 295,454,720 a batch). Both now come from the canvas's graph."""
    status, graph = lenet_window.workbench.totals, lenet_window.graph.scene.graph
    qtbot.waitUntil(lambda: status.totals is not None, timeout=30000)
    boxes = sum(n.flops + sum(b.flops for b in n.bands) for n in graph.nodes.values())
    params = sum(n.params + sum(b.params for b in n.bands) for n in graph.nodes.values())
    # the boxes' per-image figures are floats (divided by the batch); the status bar rounds the sum
    assert abs(status.totals.flops - boxes) <= 0.5
    assert status.totals.params == params == graph.total_params == 431080
    same = f"{summary.count(params)} params · "  # the two labels read the same figures in the same words
    assert status.text().startswith(same) and lenet_window.graph.totals.text().endswith(
        f"{same}{summary.flops(graph.total_flops)}/image"
    )
    assert f"{summary.flops(status.totals.flops)}/image" in status.text()


def test_totals_allocate_no_weights():
    """#32 case 6: a 3-line InnerProduct 20000 -> 25000 reached 5.9 GB when a Net was built to count it."""
    net = parse_net(
        'layer { name: "x" type: "Input" top: "x" input_param { shape { dim: 64 dim: 20000 } } }\n'
        'layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y"\n'
        "  inner_product_param { num_output: 25000 } }\n"
    )
    tracemalloc.start()
    try:
        totals = net_totals(net)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert totals.params == 20000 * 25000 + 25000
    assert totals.blobs == 64 * 20000 + 64 * 25000
    assert totals.flops == 2 * 20000 * 25000 + 25000
    assert peak < 20 * 2**20  # the weights alone are 2 GB of float32
