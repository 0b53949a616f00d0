"""Property tests: no wiring and no edit of an example prototxt crashes the engine.

Random wirings of a few layers (unknown bottoms, tops produced twice, in-place layers on a blob
others also read, bottoms that name a later layer's top, shared parameters of unequal shapes) and
random mutations of the nets in resources/examples (a field deleted, a number changed), parsed by
proto.textio and built by engine.net.Net in TRAIN and TEST, must either run forward and backward
or raise an engine error naming a layer or blob. Absurd sizes are refused before any allocation.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from test_fuzz_layers import FUZZ_SETTINGS, SMALL_LIMIT, run_net

import engine.blob
from engine.errors import NetError
from engine.net import Net
from proto import caffe_pb2, textio
from proto.errors import FormatError

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
# CaffeNet is left out: filling its 61 M weights takes seconds per example.
MUTATED = ["mlp.prototxt", "siamese.prototxt", "fcn.prototxt", "inception.prototxt", "mnist/lenet.prototxt"]
MUTATED += ["mnist/lenet_train_test.prototxt", "legacy/lenet_v1.prototxt", "resnet.prototxt"]


@pytest.fixture
def small_blobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine.blob, "MAX_BLOB_COUNT", SMALL_LIMIT)


# --- absurd sizes ------------------------------------------------------------------------------
def _net(text: str) -> caffe_pb2.NetParameter:
    return textio.parse_net(text)


def _input(*dims: int) -> str:
    shape = " ".join(f"dim: {d}" for d in dims)
    return f'layer {{ name: "data" type: "Input" top: "x" input_param {{ shape {{ {shape} }} }} }}'


@pytest.mark.parametrize(
    ("text", "layer"),
    [
        (_input(10**9, 10**9), "data"),
        (_input(0, 2**32 - 1, 2**32 - 1, 2**32 - 1), "data"),  # count 0, but dims Caffe's ints cannot hold
        (
            'layer { name: "dd" type: "DummyData" top: "x" '
            "dummy_data_param { shape { dim: 65536 dim: 65536 } } }",
            "dd",
        ),
        (
            _input(2, 3) + 'layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y" '
            "inner_product_param { num_output: 4294967295 } }",
            "ip",
        ),
        (
            _input(2, 3)
            + 'layer { name: "tile" type: "Tile" bottom: "x" top: "y" tile_param { tiles: 2147483647 } }',
            "tile",
        ),
        (
            _input(1, 1, 4, 4) + 'layer { name: "conv" type: "Convolution" bottom: "x" top: "y" '
            "convolution_param { num_output: 1 kernel_size: 1 pad: 1000000 } }",
            "conv",
        ),
        (
            _input(1, 1, 4, 4) + 'layer { name: "pool" type: "Pooling" bottom: "x" top: "y" '
            "pooling_param { kernel_size: 60000 pad: 30000 stride: 60000 } }",  # a 1x1 top, a huge frame
            "pool",
        ),
    ],
)
def test_absurd_sizes_are_refused_before_allocating(text: str, layer: str) -> None:
    with pytest.raises(NetError, match=rf"layer '{layer}'.*exceeds the limit of 2147483647 values"):
        Net(_net(text), phase=caffe_pb2.TEST)


def test_blob_size_limit_is_caffes_int_max() -> None:
    blob = engine.blob.Blob((46341, 46340))  # 2147441940 values: allowed, not touched
    assert blob.count() == 46341 * 46340
    del blob
    with pytest.raises(ValueError, match=r"46341 46341 \(2147488281\) exceeds"):
        engine.blob.Blob((46341, 46341))


# --- random wirings ----------------------------------------------------------------------------
NAMES = ["data", "label", "a", "b", "c"]
TEMPLATES = {
    "ReLU": "",
    "Sigmoid": "",
    "Dropout": "",
    "Softmax": "",
    "Flatten": "",
    "Split": "",
    "Silence": "",
    "Concat": "",
    "Eltwise": "",
    "Slice": "",
    "InnerProduct": "inner_product_param { num_output: 3 }",
    "Scale": "scale_param { bias_term: true }",
    "EuclideanLoss": "",
    "SoftmaxWithLoss": "",
    "Accuracy": "",
}


@st.composite
def wirings(draw: Any) -> caffe_pb2.NetParameter:
    lines = []
    if draw(st.integers(0, 4)):
        shape = draw(
            st.sampled_from(["dim: 2 dim: 3", "dim: 2 dim: 3 dim: 2 dim: 2", "dim: 3", "dim: 0 dim: 3"])
        )
        lines.append(
            'layer { name: "input" type: "Input" top: "data" top: "label" '
            f"input_param {{ shape {{ {shape} }} shape {{ dim: 2 }} }} }}"
        )
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(sorted(TEMPLATES)))
        bottoms = draw(st.lists(st.sampled_from(NAMES), max_size=3))
        tops = draw(st.lists(st.sampled_from(NAMES), max_size=3))
        wiring = "".join(f' bottom: "{b}"' for b in bottoms) + "".join(f' top: "{t}"' for t in tops)
        extra = TEMPLATES[kind]
        if kind in ("InnerProduct", "Scale") and draw(st.booleans()):
            extra += ' param { name: "shared" }'  # shapes that may not agree across layers
        if draw(st.integers(0, 5)) == 0:
            extra += f" include {{ phase: {draw(st.sampled_from(['TRAIN', 'TEST']))} }}"
        lines.append(f'layer {{ name: "l{i}" type: "{kind}"{wiring} {extra} }}')
    net = textio.parse_net("\n".join(lines))
    net.force_backward = draw(st.booleans())
    return net


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@FUZZ_SETTINGS
@given(net=wirings(), phase=st.sampled_from([caffe_pb2.TRAIN, caffe_pb2.TEST]), mode=st.integers(0, 2))
def test_random_wirings_never_crash(net: caffe_pb2.NetParameter, phase: int, mode: int) -> None:
    engine.blob.MAX_BLOB_COUNT, saved = SMALL_LIMIT, engine.blob.MAX_BLOB_COUNT
    try:
        run_net(net, phase, mode)
    finally:
        engine.blob.MAX_BLOB_COUNT = saved


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('layer { name: "r" type: "ReLU" bottom: "nowhere" top: "x" }', "Unknown bottom blob 'nowhere'"),
        (
            'layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 } } }'
            'layer { name: "in2" type: "Input" top: "x" input_param { shape { dim: 2 } } }',
            "Top blob 'x' produced by multiple sources",
        ),
        (  # a bottom named after a later layer's top: Caffe reads layers in order, so no cycle
            'layer { name: "a" type: "ReLU" bottom: "y" top: "x" }'
            'layer { name: "b" type: "ReLU" bottom: "x" top: "y" }',
            "Unknown bottom blob 'y'",
        ),
        (
            'layer { name: "in" type: "Input" top: "x" top: "y" input_param { shape { dim: 2 dim: 3 } } }'
            'layer { name: "c" type: "Concat" bottom: "x" bottom: "y" top: "x" }',
            "layer 'c' \\(Concat\\): cannot compute in place",
        ),
        (
            'layer { name: "in" type: "Input" top: "x" top: "y" input_param { shape { dim: 2 dim: 3 } } }'
            'layer { name: "loss" type: "EuclideanLoss" bottom: "x" bottom: "y" top: "x" }',
            "layer 'loss' \\(EuclideanLoss\\): a loss cannot be computed in place",
        ),
    ],
)
def test_bad_wirings_name_the_culprit(text: str, match: str) -> None:
    with pytest.raises(NetError, match=match):
        Net(_net(text), phase=caffe_pb2.TRAIN)


def test_in_place_neuron_layers_stay_allowed() -> None:
    text = (
        'layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 } } }'
        'layer { name: "relu" type: "ReLU" bottom: "x" top: "x" }'
        'layer { name: "bn" type: "BatchNorm" bottom: "x" top: "x" }'
    )
    net = Net(_net(text), phase=caffe_pb2.TRAIN)
    net.forward()
    assert net.blob_by_name("x").shape == (2, 3)


# --- mutated examples --------------------------------------------------------------------------
_SCALAR = re.compile(r"^(\s*)(\w+)\s*:\s*(\S+)\s*$")
_NEW_VALUES = ["0", "-1", "1", "3", "2147483647", "-2147483648", "4294967295", "0.5", "nan", "inf", "-inf"]


@st.composite
def mutated_examples(draw: Any) -> str:
    lines = (EXAMPLES / draw(st.sampled_from(MUTATED))).read_text().splitlines()
    fields = [i for i, line in enumerate(lines) if _SCALAR.match(line)]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.sampled_from(fields))
        match = _SCALAR.match(lines[i])
        if match is None:  # deleted by an earlier mutation
            continue
        if draw(st.booleans()):
            lines[i] = ""
        else:
            lines[i] = f"{match.group(1)}{match.group(2)}: {draw(st.sampled_from(_NEW_VALUES))}"
    return "\n".join(lines)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@FUZZ_SETTINGS
@given(text=mutated_examples(), phase=st.sampled_from([caffe_pb2.TRAIN, caffe_pb2.TEST]))
def test_mutated_examples_never_crash(text: str, phase: int) -> None:
    try:
        param = textio.parse_net(text)
    except FormatError:
        assume(False)  # not a net any more: proto's own, clear refusal
    engine.blob.MAX_BLOB_COUNT, saved = 10**8, engine.blob.MAX_BLOB_COUNT
    try:
        # Batches of one keep the forward pass of the larger nets short.
        for layer in param.layer:
            for shape in layer.input_param.shape:
                if shape.dim and shape.dim[0] > 1:
                    shape.dim[0] = 1
            for shape in layer.dummy_data_param.shape:
                if shape.dim and shape.dim[0] > 1:
                    shape.dim[0] = 1
        run_net(param, phase, mode=0, max_forward_values=3 * 10**6)
    finally:
        engine.blob.MAX_BLOB_COUNT = saved


def test_a_user_reshape_past_the_limit_names_the_layer_at_forward() -> None:
    text = (
        'layer { name: "data" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 } } }'
        'layer { name: "tile" type: "Tile" bottom: "x" top: "y" tile_param { tiles: 1048576 } }'
    )
    net = Net(_net(text), phase=caffe_pb2.TEST)
    net.blob_by_name("x").reshape(2, 3000)  # the tile's top would hold 6.3e9 values
    with pytest.raises(NetError, match=r"layer 'tile' \(Tile\) cannot be reshaped.*exceeds the limit"):
        net.forward()
    with pytest.raises(NetError, match=r"layer 'tile'"):
        net.reshape()


def test_running_out_of_memory_names_the_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _input(2, 3) + 'layer { name: "relu" type: "ReLU" bottom: "x" top: "y" }'
    net = Net(_net(text), phase=caffe_pb2.TEST, xp=np)

    def exhausted(*args: Any, **kwargs: Any) -> None:
        raise MemoryError("Unable to allocate 512. GiB")

    monkeypatch.setattr(net.layers[1], "forward", exhausted)
    with pytest.raises(MemoryError, match=r"layer 'relu' \(ReLU\) ran out of memory in forward") as info:
        net.forward()
    assert isinstance(info.value, NetError)


@pytest.mark.parametrize("shape", [(0, 3, 4, 4), (2, 0, 4, 4), (2, 3, 0, 4), (0, 3), (2, 3)])
@pytest.mark.parametrize("kind", ["Convolution", "Deconvolution", "Pooling", "Im2col"])
@pytest.mark.parametrize("geometry", ["kernel_size: 1", "kernel_size: 2 stride: 2 pad: 1"])
def test_vision_layers_on_empty_or_flat_blobs(shape: tuple[int, ...], kind: str, geometry: str) -> None:
    """An empty batch, channel or row axis, or no spatial axis at all: run, or a clear refusal."""
    params = (
        f"pooling_param {{ {geometry} }}"
        if kind == "Pooling"
        else f'convolution_param {{ num_output: 2 {geometry} weight_filler {{ type: "gaussian" }} }}'
    )
    text = _input(*shape) + f'layer {{ name: "v" type: "{kind}" bottom: "x" top: "y" {params} }}'
    net = _net(text)
    net.force_backward = True
    run_net(net, caffe_pb2.TRAIN, mode=1)
