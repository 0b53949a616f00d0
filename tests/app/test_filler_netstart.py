"""The "How the net starts" dock: one batch through the freshly initialised net, two initialisations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.commands import SetLayerField
from app.main_window import MainWindow


def relu_stack(depth: int = 10, width: int = 256, std: float = 0.01) -> str:
    filler = f'weight_filler {{ type: "gaussian" std: {std} }}'
    shape = f"shape {{ dim: 16 dim: {width} }}"
    text = [
        'name: "deep_relu"',
        f'layer {{ name: "data" type: "Input" top: "data" input_param {{ {shape} }} }}',
    ]
    bottom = "data"
    for k in range(1, depth + 1):
        text.append(
            f'layer {{ name: "ip{k}" type: "InnerProduct" bottom: "{bottom}" top: "ip{k}" '
            f"inner_product_param {{ num_output: {width} {filler} }} }}"
        )
        text.append(f'layer {{ name: "relu{k}" type: "ReLU" bottom: "ip{k}" top: "ip{k}" }}')
        bottom = f"ip{k}"
    return "\n".join(text)


@pytest.fixture
def window(qtbot, tmp_path) -> MainWindow:
    path = tmp_path / "deep.prototxt"
    path.write_text(relu_stack())
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = lambda *a: "discard"
    assert w.open_file(path)
    w.show()
    w.net_start_dock.raise_()
    qtbot.waitExposed(w)
    return w


def curves(panel, key: str) -> list[np.ndarray]:
    return [np.asarray(curve.yData) for curve in panel.curves[key]]


def test_a_badly_scaled_gaussian_shows_its_std_decay_beside_msra(qtbot, window):
    panel = window.net_start_dock.widget()
    qtbot.waitUntil(lambda: panel.results is not None, timeout=20000)
    assert [c.currentText() for c in panel.choices] == ["the net's own fillers", "msra everywhere"]
    assert panel.axes[0].names == ["data"] + [f"ip{k}" for k in range(1, 11)]

    bad, msra = curves(panel, "act_std")  # what the plot draws (log axis: the values themselves)
    per_layer = bad[2:] / bad[1:-1]
    expected = 0.01 * math.sqrt(256 / 2)  # a ReLU layer scales the rms by std * sqrt(fan_in / 2)
    assert np.all(np.abs(per_layer / expected - 1) < 0.25), per_layer
    assert bad[-1] < 1e-8 * bad[0]
    assert 0.3 < msra[-1] / msra[1] < 3
    bad_grad, msra_grad = curves(panel, "grad_norm")
    assert bad_grad[1] < 1e-6 * bad_grad[-1] and 0.3 < msra_grad[1] / msra_grad[-1] < 3
    assert "vanishes" in panel.summary.text() and "holds" in panel.summary.text()
    assert "random N(0, 1) values in data 16×256" in panel.source.text()


def test_changing_a_choice_or_the_net_runs_it_again(qtbot, window):
    panel = window.net_start_dock.widget()
    qtbot.waitUntil(lambda: panel.results is not None, timeout=20000)
    with qtbot.waitSignal(panel.finished, timeout=20000):
        panel.choices[0].setCurrentText("xavier everywhere")
    xavier = curves(panel, "act_std")[0]
    assert 0.01 < xavier[-1] / xavier[1] < 0.2  # xavier ignores ReLU's halving: a slow decay

    panel.choices[0].setCurrentText("the net's own fillers")
    qtbot.waitUntil(lambda: panel.results[0].label == "the net's own fillers", timeout=20000)
    before = curves(panel, "act_std")[0]
    with qtbot.waitSignal(panel.finished, timeout=20000):  # an edit in the document: the same draws, scaled
        window.push(SetLayerField(window.doc.index_of("ip1"), "inner_product_param.weight_filler.std", 0.08))
    after = curves(panel, "act_std")[0]
    assert after[0] == before[0] and after[1] / before[1] == pytest.approx(8, rel=1e-4)
