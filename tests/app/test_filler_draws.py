"""The panel's draws are `main.py fill`'s; the preview's numbers; how the net starts (Qt-free)."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from app.fillers.draws import initialise, net_layer_index
from app.fillers.netstart import probe, verdict
from app.fillers.summary import summarise
from app.fillers.traps import traps
from engine import rng
from engine.cli.fill import initial_parameters
from engine.net import Net
from engine.rng import seeded
from proto import caffe_pb2, textio

TRAIN, TEST = caffe_pb2.TRAIN, caffe_pb2.TEST
NET = """
name: "small"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 4 dim: 3 dim: 12 dim: 12 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 8 kernel_size: 3 weight_filler { type: "msra" }
                            bias_filler { type: "constant" value: 0.1 } } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "ip_train" type: "InnerProduct" bottom: "conv1" top: "ip" include { phase: TRAIN }
        inner_product_param { num_output: 6 weight_filler { type: "gaussian" std: 0.05 } } }
layer { name: "ip_test" type: "InnerProduct" bottom: "conv1" top: "ip" include { phase: TEST }
        inner_product_param { num_output: 6 weight_filler { type: "xavier" } } }
layer { name: "prelu" type: "PReLU" bottom: "ip" top: "ip"
        prelu_param { filler { type: "uniform" min: 0.1 max: 0.3 } } }
"""


def relu_stack(depth: int, width: int, filler: str, batch: int = 64) -> str:
    shape = f"shape {{ dim: {batch} dim: {width} }}"
    text = [f'layer {{ name: "data" type: "Input" top: "data" input_param {{ {shape} }} }}']
    bottom = "data"
    for k in range(1, depth + 1):
        text.append(
            f'layer {{ name: "ip{k}" type: "InnerProduct" bottom: "{bottom}" top: "ip{k}" '
            f"inner_product_param {{ num_output: {width} weight_filler {{ {filler} }} }} }}"
        )
        text.append(f'layer {{ name: "relu{k}" type: "ReLU" bottom: "ip{k}" top: "ip{k}" }}')
        bottom = f"ip{k}"
    return "\n".join(text)


@pytest.fixture
def net_file(tmp_path):
    path = tmp_path / "small.prototxt"
    path.write_text(NET)
    return path


@pytest.mark.parametrize("phase", [TRAIN, TEST])
def test_the_draws_are_what_fill_writes_for_the_same_seed(net_file, phase):
    net = textio.read_net(str(net_file))
    written = initial_parameters(str(net_file), phase, 11)
    drawn = initialise(net, phase, 11)
    assert drawn.error is None
    keys = {f"{net.layer[i].name}/{k}" for i, blobs in drawn.blobs.items() for k in range(len(blobs))}
    assert keys == set(written)
    for i, blobs in drawn.blobs.items():
        for k, values in enumerate(blobs):
            np.testing.assert_array_equal(values, written[f"{net.layer[i].name}/{k}"])
    other = initialise(net, phase, 12)
    assert not np.array_equal(other.blobs[1][0], drawn.blobs[1][0])


def test_layers_of_the_other_phase_are_not_drawn(net_file):
    net = textio.read_net(str(net_file))
    built = Net(net, phase=TRAIN, xp=np)
    assert net_layer_index(built, net, 3, TRAIN) == built.layer_names.index("ip_train")
    assert net_layer_index(built, net, 4, TRAIN) is None
    drawn = initialise(net, TEST, 1).blobs
    assert 3 not in drawn and {i for i, blobs in drawn.items() if blobs} == {1, 4, 5}


def test_a_preview_and_the_rest_of_the_app_draw_from_separate_generators(net_file):
    net = textio.read_net(str(net_file))
    before = rng.host()
    state = before.bit_generator.state
    stop, others = threading.Event(), []

    def elsewhere() -> None:  # the GUI thread inferring shapes, a training run's Dropout masks, ...
        while not stop.is_set():
            others.append(rng.host() is before and rng.for_module(np) is before)
            rng.host().random(100)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    try:
        drawn = initialise(net, TRAIN, 3)
        with seeded(4):
            assert rng.host() is not before and rng.for_module(np) is rng.host()
    finally:
        stop.set()
        thread.join()
    assert others and all(others)
    np.testing.assert_array_equal(drawn.blobs[1][0], initial_parameters(str(net_file), TRAIN, 3)["conv1/0"])
    rng.set_random_seed(1701)
    before = rng.host()
    state = before.bit_generator.state
    initialise(net, TRAIN, 3)
    assert rng.host() is before and before.bit_generator.state == state


def test_a_net_that_cannot_be_built_says_why():
    net = textio.parse_net(
        'layer { name: "mnist" type: "Data" top: "data" top: "label" '
        'data_param { source: "/nonexistent/lmdb" batch_size: 4 backend: LMDB } }'
    )
    drawn = initialise(net, TRAIN, 1)
    assert drawn.blobs == {} and "mnist" in drawn.error


def test_summary_of_an_msra_blob(net_file):
    values = initialise(textio.read_net(str(net_file)), TRAIN, 5).blobs[1][0]  # conv1: 8 x 3 x 3 x 3
    filler = caffe_pb2.FillerParameter(type="msra")
    preview = summarise(values, filler, "Convolution", "weights")
    assert np.sum(preview.density * np.diff(preview.edges)) == pytest.approx(1.0)
    assert preview.expected == {"mean": 0.0, "std": math.sqrt(2 / 27), "fan_in": 27, "fan_out": 72, "n": 27.0}
    assert preview.std == pytest.approx(float(values.std()), rel=1e-6)
    x, pdf = preview.theory
    assert pdf.max() == pytest.approx(1 / (math.sqrt(2 / 27) * math.sqrt(2 * math.pi)), rel=1e-3)
    # 8 filters: a block of 3 channel tiles (3x3) each, 5 blocks a row; gaps of 1 (tiles), 3 (blocks)
    assert preview.mosaic.shape == (2 * 3 + 3, 5 * 11 + 4 * 3)
    np.testing.assert_array_equal(preview.mosaic[:3, :3], values[0, 0])
    assert preview.warnings == []


def test_known_traps_are_named():
    zero = caffe_pb2.FillerParameter(type="constant")
    assert "symmetry" in traps("Convolution", "weights", zero, (96, 3, 11, 11))[0]
    assert traps("Convolution", "bias", zero, (96,)) == []
    small = caffe_pb2.FillerParameter(type="gaussian", std=0.01)
    (warning,) = traps("Convolution", "weights", small, (256, 48, 5, 5))  # CaffeNet's conv2
    assert "4.1× smaller than √(2/fan_in) = 0.0408 (fan_in 1200)" in warning
    assert traps("InnerProduct", "weights", small, (4096, 9216)) == []  # 0.68× the ReLU spread: fine


def test_a_badly_scaled_gaussian_vanishes_through_a_relu_stack():
    net = textio.parse_net(relu_stack(10, 256, 'type: "gaussian" std: 0.01'))
    bad, good = probe(net, TRAIN, 1), probe(net, TRAIN, 1, "msra everywhere")
    assert bad.names == ["data"] + [f"ip{k}" for k in range(1, 11)]
    gain = 0.01 * math.sqrt(256 / 2)  # each ReLU layer scales the rms by std * sqrt(fan_in / 2)
    ratios = np.array(bad.act_std[2:]) / np.array(bad.act_std[1:-1])
    assert np.all(np.abs(ratios / gain - 1) < 0.25), ratios
    assert bad.act_std[-1] < 1e-8 and "vanishes" in verdict(bad)
    assert 0.3 < good.act_std[-1] / good.act_std[1] < 3 and "holds" in verdict(good)
    assert bad.grad_norm[1] < 1e-6 * bad.grad_norm[-1]  # the gradient vanishes on its way down too
