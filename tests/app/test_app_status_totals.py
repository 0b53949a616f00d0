"""The status bar's totals belong to the net on screen: opening another net never leaves the last
net's figures standing while the new ones are measured."""

from __future__ import annotations

from app.files import EXAMPLES
from app.main_window import MainWindow

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
