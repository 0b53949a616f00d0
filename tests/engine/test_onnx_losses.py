"""HingeLoss, MultinomialLogisticLoss and InfogainLoss of a TRAIN net in ONNX: onnxruntime's values agree
with the engine's forward within 1e-5 over a grid of their settings (Infogain's H from its source
file, held in the model as an initializer, or a third input; class axis; ignore_label; normalization)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_support import assert_agree, build, compare

from engine.blob import array_to_proto
from proto import caffe_pb2

TRAIN = caffe_pb2.TRAIN


def inputs(*shapes: tuple[str, tuple[int, ...]]) -> str:
    tops = " ".join(f'top: "{name}"' for name, _ in shapes)
    dims = " ".join("shape { " + " ".join(f"dim: {d}" for d in s) + " }" for _, s in shapes)
    return f'layer {{ name: "in" type: "Input" {tops} input_param {{ {dims} }} }}\n'


def agree(text: str, feeds: dict[str, np.ndarray], losses: tuple[str, ...]) -> None:
    results = compare(build(text, phase=TRAIN), feeds=feeds)
    assert set(losses) <= set(results), sorted(results)
    for name in losses:  # a loss that is nonzero: a dropped term would show
        assert np.abs(results[name][1]).max() > 1e-3, (name, results[name])
    assert_agree(results)


@pytest.mark.parametrize("norm", ["L1", "L2"])
def test_hinge_loss_over_4d_samples_with_margins_at_zero(norm: str) -> None:
    draw = np.random.default_rng(21)
    x = draw.standard_normal((3, 2, 2, 2)).astype(np.float32)
    label = draw.integers(0, 8, (3,)).astype(np.float32)
    x.reshape(3, 8)[0, int(label[0])] = 1.0  # margin exactly 0 at a label
    text = inputs(("x", (3, 2, 2, 2)), ("label", (3,)))
    text += (
        'layer { name: "h" type: "HingeLoss" bottom: "x" bottom: "label" top: "loss" loss_weight: 2 '
        f"hinge_loss_param {{ norm: {norm} }} }}"
    )
    agree(text, {"x": x, "label": label}, ("loss",))


def test_multinomial_logistic_loss_clamps_at_its_threshold() -> None:
    draw = np.random.default_rng(22)
    p = draw.uniform(0.05, 1, (4, 3, 1, 2)).astype(np.float32)
    label = draw.integers(0, 6, (4, 1, 1, 1)).astype(np.float32)
    p.reshape(4, 6)[1, int(label[1, 0, 0, 0])] = 1e-30  # under kLOG_THRESHOLD = 1e-20
    text = inputs(("p", (4, 3, 1, 2)), ("label", (4, 1, 1, 1)))
    text += 'layer { name: "m" type: "MultinomialLogisticLoss" bottom: "p" bottom: "label" top: "loss" }'
    agree(text, {"p": p, "label": label}, ("loss",))


INFOGAIN = [  # (loss_param text, the labels' ignore value)
    ("", None),
    ("loss_param { ignore_label: 2 }", 2),
    ("loss_param { ignore_label: 0 normalization: FULL }", 0),
    ("loss_param { normalization: BATCH_SIZE }", None),
    ("loss_param { normalization: NONE }", None),
]


@pytest.mark.parametrize("body,ignore", INFOGAIN)
@pytest.mark.parametrize("axis", [1, -1])
@pytest.mark.parametrize("where", ["source", "bottom"])
def test_infogain_loss(tmp_path, body: str, ignore: int | None, axis: int, where: str) -> None:
    draw = np.random.default_rng(23)
    shape, label_shape = ((2, 4, 3), (2, 1, 3)) if axis == 1 else ((2, 3, 4), (2, 3))
    x = draw.standard_normal(shape).astype(np.float32) * 2
    label = draw.integers(0, 4, label_shape).astype(np.float32)
    if ignore is not None:
        label.reshape(-1)[::3] = ignore
    h = draw.uniform(0, 2, (1, 1, 4, 4)).astype(np.float32)
    feeds = {"x": x, "label": label}
    if where == "source":
        (tmp_path / "H.binaryproto").write_bytes(array_to_proto(h).SerializeToString())
        extra = f'source: "{tmp_path / "H.binaryproto"}"'
        text = inputs(("x", shape), ("label", label_shape))
        bottoms = 'bottom: "x" bottom: "label"'
    else:
        feeds["H"] = h
        extra = ""
        text = inputs(("x", shape), ("label", label_shape), ("H", (1, 1, 4, 4)))
        bottoms = 'bottom: "x" bottom: "label" bottom: "H"'
    text += (
        f'layer {{ name: "i" type: "InfogainLoss" {bottoms} top: "loss" top: "prob" '
        f"loss_weight: 0.5 loss_weight: 0 infogain_loss_param {{ {extra} axis: {axis} }} {body} }}"
    )
    agree(text, feeds, ("loss", "prob"))
