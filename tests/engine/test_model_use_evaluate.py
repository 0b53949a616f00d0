"""`main.py evaluate` (engine/model_use/evaluate.py, metrics.py) on small generated data: its
counts equal a direct computation (each item through the net one by one, tallied by hand), and on
a TEST data layer its top-1 equals the net's own Accuracy layer."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import engine as caffe
import main
from engine.data.lmdb_writer import write_datum_lmdb
from engine.data.transformer import DataTransformer
from engine.model_use import evaluate as scoring
from engine.model_use.metrics import Evaluation
from engine.net import Net
from proto import caffe_pb2, textio
from proto.binaryio import write_caffemodel

TRANSFORM = "transform_param { mean_value: 120 scale: 0.02 }"
BODY = """
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.5 } } }
"""
TRAIN_VAL = (
    'layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }\n'
    f'  {TRANSFORM} data_param {{ source: "items_lmdb" batch_size: 6 backend: LMDB }} }}'
    + BODY
    + 'layer { name: "accuracy" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" }\n'
    'layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }\n'
)
N = 24


@pytest.fixture
def model(tmp_path: Path, monkeypatch) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    """A train_val net over an LMDB of N 3x5x5 items with labels, and seeded weights."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(4)
    items = rng.integers(0, 256, (N, 3, 5, 5), dtype=np.uint8)
    labels = rng.integers(0, 4, N)
    write_datum_lmdb(tmp_path / "items_lmdb", items, labels)
    net_path = tmp_path / "train_val.prototxt"
    net_path.write_text(TRAIN_VAL)
    param = textio.read_net(net_path)
    param.state.phase = caffe_pb2.TEST
    net = Net(param)
    weights = tmp_path / "w.caffemodel"
    write_caffemodel(weights, net.to_proto())
    net.close()
    return net_path, weights, items, labels


def direct(net_path: Path, weights: Path, items: np.ndarray) -> np.ndarray:
    """Each item alone: the data layer's transform by hand, then the net, then a softmax."""
    deploy = net_path.parent / "by_hand.prototxt"
    deploy.write_text(
        'layer { name: "d" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 5 dim: 5 } } }'
        + BODY
    )
    net = caffe.Net(str(deploy), caffe.TEST, weights=str(weights))
    transform = textio.parse_net(f'layer {{ name: "x" type: "Input" {TRANSFORM} }}').layer[0].transform_param
    out = []
    for item in items:
        x = DataTransformer(transform, caffe_pb2.TEST)(item[None])
        scores = net.forward(data=x)["ip"][0].astype(np.float64)
        out.append(np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum())
    return np.array(out)


def tally(labels: np.ndarray, predicted: np.ndarray, classes: int) -> np.ndarray:
    matrix = np.zeros((classes, classes), int)
    for true, guess in zip(labels, predicted):
        matrix[true][guess] += 1
    return matrix


def read_csv(path: Path) -> tuple[list[str], np.ndarray]:
    rows = list(csv.reader(io.StringIO(path.read_text())))
    return rows[0][1:], np.array([[int(v) for v in row[1:]] for row in rows[1:]])


def test_lmdb_counts_equal_a_direct_computation(tmp_path, model, capsys) -> None:
    net_path, weights, items, labels = model
    matrix_csv = tmp_path / "m.csv"
    argv = ["evaluate", "--model", str(net_path), "--weights", str(weights), "--data", "items_lmdb"]
    assert main.main([*argv, "--csv", str(matrix_csv), "--batch-size", "5"]) == 0
    probs = direct(net_path, weights, items)
    want = tally(labels, probs.argmax(1), 4)
    header, got = read_csv(matrix_csv)
    assert header == ["0", "1", "2", "3"]
    np.testing.assert_array_equal(got, want)
    out = capsys.readouterr().out
    hits = int(np.trace(want))
    assert f"Top-1 accuracy: {hits / N:.4f} ({hits}/{N})" in out
    top2 = sum(int(l in np.argsort(-p)[:2]) for l, p in zip(labels, probs))
    assert top2 > hits  # the data tells top-1 from top-k apart
    assert f"Top-5 accuracy: 1.0000 ({N}/{N})" in out  # 4 classes: top-5 holds every class


def test_the_test_data_layer_gives_the_accuracy_layers_top1(tmp_path, model, capsys) -> None:
    net_path, weights, _, _ = model
    assert main.main(["evaluate", "--model", str(net_path), "--weights", str(weights)]) == 0
    out = capsys.readouterr().out
    assert main.main(["test", "--model", str(net_path), "--weights", str(weights), "--iterations", "4"]) == 0
    err = capsys.readouterr().err
    accuracy = float(err.split("accuracy = ")[-1].split()[0])  # the mean over 4 batches of 6 = all 24
    top1 = float(out.split("Top-1 accuracy: ")[1].split()[0])
    assert top1 == pytest.approx(accuracy, abs=1e-4)  # both printed to 4+ digits


def test_class_folders_skip_a_broken_image_and_count_the_rest(tmp_path, model, capsys) -> None:
    net_path, weights, items, labels = model
    root = tmp_path / "set"
    for i, (item, label) in enumerate(zip(items, labels)):
        folder = root / f"class{label}"
        folder.mkdir(parents=True, exist_ok=True)
        # BGR channels first -> an RGB PNG that decodes back to the same bytes
        Image.fromarray(item.transpose(1, 2, 0)[:, :, ::-1]).save(folder / f"{i:02d}.png")
    for label in range(4):
        (root / f"class{label}").mkdir(parents=True, exist_ok=True)
    (root / "class0" / "broken.png").write_bytes(b"no image here")
    matrix_csv = tmp_path / "m.csv"
    argv = ["evaluate", "--model", str(net_path), "--weights", str(weights), "--data", str(root)]
    assert main.main([*argv, "--csv", str(matrix_csv)]) == 2  # one image could not be read
    captured = capsys.readouterr()
    assert sum("broken.png" in line for line in captured.err.splitlines()) == 1
    header, got = read_csv(matrix_csv)
    assert header == ["class0", "class1", "class2", "class3"]
    want = tally(labels, direct(net_path, weights, items).argmax(1), 4)
    np.testing.assert_array_equal(got, want)
    # The same images as an image list ('path label' lines, relative to the list's folder).
    listing = tmp_path / "list.txt"
    listing.write_text("".join(f"set/class{l}/{i:02d}.png {l}\n" for i, l in enumerate(labels)))
    argv[-1] = str(listing)
    assert main.main([*argv, "--csv", str(matrix_csv)]) == 0
    np.testing.assert_array_equal(read_csv(matrix_csv)[1], want)


def test_precision_recall_and_mistakes_by_hand() -> None:
    probs = np.array([[0.9, 0.1, 0], [0.2, 0.7, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [0.25, 0.65, 0.1]])
    result = Evaluation([f"i{k}" for k in range(5)], np.array([0, 1, 1, 2, 2]), probs, ["a", "b", "c"])
    np.testing.assert_array_equal(result.confusion(), [[1, 0, 0], [1, 1, 0], [0, 1, 1]])
    precision, recall = result.precision_recall()
    np.testing.assert_allclose(precision, [1 / 2, 1 / 2, 1])
    np.testing.assert_allclose(recall, [1, 1 / 2, 1 / 2])
    assert result.mistakes() == [4, 2]  # 0.65 on 'b' for item 4, then 0.6 on 'a' for item 2
    assert result.items(2, 1) == [4]
    assert result.accuracy(1) == pytest.approx(3 / 5)
    assert result.accuracy(2) == pytest.approx(4 / 5)  # item 4: its class c ranks third


def test_cancel_stops_between_batches(tmp_path, model) -> None:
    net_path, weights, _, _ = model
    evaluator = scoring.Evaluator(net_path, str(weights), 5)
    data = scoring.open_data(evaluator, net_path, "items_lmdb", None, None, scoring.default_paths(net_path))
    seen: list[int] = []
    with pytest.raises(scoring.Cancelled):
        scoring.evaluate(
            evaluator, data, batch_size=5, progress=lambda done, total: seen.append(done),
            cancelled=lambda: len(seen) >= 2,
        )  # fmt: skip
    evaluator.close()
    assert seen == [5, 10]
