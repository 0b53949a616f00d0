"""HingeLoss, MultinomialLogisticLoss and InfogainLoss in a TRAIN net, exported the user's way (the
prototxt on disk, `export_module` writing OUT.py and OUT.pt, the file imported and ``load()``ed): the
loss values and the autograd gradients (of the inputs and of the InnerProduct below the loss) agree
with the engine's forward and backward within 1e-5 relative."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from google.protobuf import text_format
from torch_export_support import compare, load_module

from engine.blob import array_to_proto
from proto import caffe_pb2

TRAIN = caffe_pb2.TRAIN
GAUSS = 'weight_filler { type: "gaussian" std: 0.5 } bias_filler { type: "gaussian" std: 0.5 }'


def inputs(*shapes: tuple[str, tuple[int, ...]]) -> str:
    return "".join(
        f'layer {{ name: "in_{name}" type: "Input" top: "{name}" input_param {{ shape {{ '
        + " ".join(f"dim: {d}" for d in shape)
        + " } } }\n"
        for name, shape in shapes
    )


def ip(bottom: str, top: str, outputs: int, axis: int = 1) -> str:
    return (
        f'layer {{ name: "ip_{top}" type: "InnerProduct" bottom: "{bottom}" top: "{top}" '
        f"inner_product_param {{ num_output: {outputs} axis: {axis} {GAUSS} }} }}\n"
    )


def net(text: str) -> caffe_pb2.NetParameter:
    return text_format.Parse(text, caffe_pb2.NetParameter())


def check(errors: dict[str, float], *expected: str) -> None:
    for what in expected:  # each loss, each input gradient and the layer below: really compared
        assert what in errors, (what, sorted(errors))
    bad = {k: v for k, v in errors.items() if not v <= 1e-5}
    assert not bad, bad


def labels(draw: np.random.Generator, classes: int, shape: tuple[int, ...]) -> np.ndarray:
    return draw.integers(0, classes, shape).astype(np.float32)


@pytest.mark.parametrize("norm", ["L1", "L2"])
@pytest.mark.parametrize("weight", [1.0, 2.5])
def test_hinge_loss_matches_engine(tmp_path, norm: str, weight: float) -> None:
    draw = np.random.default_rng(11)
    data = draw.standard_normal((4, 5)).astype(np.float32)
    label = labels(draw, 3, (4,))
    data[0, int(label[0])] = 1.0  # a margin of exactly 0 at the label (L1's sign(0) = 0)
    data[1, (int(label[1]) + 1) % 5] = -1.0  # and one elsewhere
    text = inputs(("data", (4, 5)), ("label", (4,))) + ip("data", "score", 3)
    text += (
        'layer { name: "hinge" type: "HingeLoss" bottom: "score" bottom: "label" top: "loss" '
        f"loss_weight: {weight} hinge_loss_param {{ norm: {norm} }} }}\n"
        'layer { name: "edge" type: "HingeLoss" bottom: "data" bottom: "label" top: "edge" '
        f"hinge_loss_param {{ norm: {norm} }} }}\n"
    )
    errors = compare(net(text), TRAIN, inputs={"data": data, "label": label}, via=tmp_path)
    check(errors, "out loss", "out edge", "d data", "d ip_score.weight", "d ip_score.bias")


def test_hinge_loss_over_every_value_of_a_4d_sample(tmp_path) -> None:
    draw = np.random.default_rng(12)
    text = inputs(("data", (2, 3, 2, 2)), ("label", (2, 1, 1, 1)))
    text += 'layer { name: "h" type: "HingeLoss" bottom: "data" bottom: "label" top: "loss" }\n'
    data = draw.standard_normal((2, 3, 2, 2)).astype(np.float32)
    feeds = {"data": data, "label": labels(draw, 12, (2, 1, 1, 1))}
    check(compare(net(text), TRAIN, inputs=feeds, via=tmp_path), "out loss", "d data")


@pytest.mark.parametrize("weight", [1.0, 0.3])
def test_multinomial_logistic_loss_matches_engine(tmp_path, weight: float) -> None:
    draw = np.random.default_rng(13)
    p = draw.uniform(0.05, 1, (3, 4)).astype(np.float32)
    label = labels(draw, 4, (3,))
    p[2, int(label[2])] = 1e-30  # under kLOG_THRESHOLD: clamped in the loss and in its gradient
    text = inputs(("data", (3, 6)), ("label", (3,)), ("p", (3, 4))) + ip("data", "score", 4)
    text += (
        'layer { name: "prob" type: "Softmax" bottom: "score" top: "prob" }\n'
        'layer { name: "mlog" type: "MultinomialLogisticLoss" bottom: "prob" bottom: "label" top: "loss" '
        f"loss_weight: {weight} }}\n"
        'layer { name: "clamped" type: "MultinomialLogisticLoss" bottom: "p" bottom: "label" '
        'top: "clamped" }\n'
    )
    feeds = {"data": draw.standard_normal((3, 6)).astype(np.float32), "label": label, "p": p}
    errors = compare(net(text), TRAIN, inputs=feeds, via=tmp_path)
    check(errors, "out loss", "out clamped", "d data", "d p", "d ip_score.weight")


def write_infogain(path, matrix: np.ndarray) -> None:
    path.write_bytes(array_to_proto(matrix).SerializeToString())


INFOGAIN = [  # (infogain_loss_param / loss_param text, loss_weight, labels' ignore value or None)
    ("", 1.0, None),
    ("loss_param { ignore_label: 2 }", 0.5, 2),
    ("loss_param { ignore_label: 0 normalization: FULL }", 1.0, 0),
    ("loss_param { normalization: BATCH_SIZE }", 2.0, None),
    ("loss_param { normalization: NONE }", 1.0, None),
]


GEOMETRY = {  # scores below the loss: (layers making "score", the class axis, the labels' shape)
    "classes_on_axis_1": (
        ip("data", "flat", 8) + 'layer { name: "r" type: "Reshape" bottom: "flat" top: "score" '
        "reshape_param { shape { dim: 0 dim: 4 dim: 2 } } }\n", 1, (3, 1, 2),
    ),
    "classes_last": (ip("data", "score", 4, axis=2), -1, (3, 2)),
}  # fmt: skip


@pytest.mark.parametrize(
    "body,weight,ignore,geometry",
    [(*case, "classes_on_axis_1") for case in INFOGAIN]
    + [("loss_param { ignore_label: 1 }", 1.5, 1, "classes_last")],
)  # fmt: skip
@pytest.mark.parametrize("where", ["source", "bottom"])
def test_infogain_loss_matches_engine(
    tmp_path, body: str, weight: float, ignore: int | None, geometry: str, where: str
) -> None:
    draw = np.random.default_rng(14)
    layers, axis, label_shape = GEOMETRY[geometry]
    h = draw.uniform(0, 2, (4, 4)).astype(np.float32)
    label = labels(draw, 4, label_shape)
    if ignore is not None:
        label.reshape(-1)[::4] = ignore
    data_shape = (3, 6) if axis == 1 else (3, 2, 5)
    shapes = [("data", data_shape), ("label", label_shape)]
    if where == "bottom":
        shapes.append(("H", (1, 1, 4, 4)))
    feeds = {"data": draw.standard_normal(data_shape).astype(np.float32), "label": label}
    if where == "source":
        write_infogain(tmp_path / "H.binaryproto", h.reshape(1, 1, 4, 4))
        extra = f'infogain_loss_param {{ source: "{tmp_path / "H.binaryproto"}" axis: {axis} }}'
        bottoms = 'bottom: "score" bottom: "label"'
    else:
        feeds["H"] = h.reshape(1, 1, 4, 4)
        extra = f"infogain_loss_param {{ axis: {axis} }}"
        bottoms = 'bottom: "score" bottom: "label" bottom: "H"'
    text = (
        inputs(*shapes)
        + layers
        + (
            f'layer {{ name: "info" type: "InfogainLoss" {bottoms} top: "loss" top: "prob" '
            f"loss_weight: {weight} loss_weight: 0 {extra} {body} }}\n"
        )
    )
    check(compare(net(text), TRAIN, inputs=feeds, via=tmp_path), "out loss", "out prob", "d data")
    if where == "source":  # H is written into the module: it loads, and holds H, with the file gone
        (tmp_path / "H.binaryproto").unlink()
        module = load_module((tmp_path / "exported_net.py").read_text())
        np.testing.assert_array_equal(module.load(str(tmp_path / "exported_net.pt")).info.infogain.numpy(), h)
