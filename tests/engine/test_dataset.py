"""`main.py dataset`: a data set from class folders, as DIGITS lays one out; resize modes; the
split; what is refused; nothing half-made; and a net trained on one learns."""

from __future__ import annotations

import json
from pathlib import Path

import lmdb
import numpy as np
import pytest
from google.protobuf import text_format
from PIL import Image

import main
from engine import events
from engine.data.dataset_builder import Cancelled, build_dataset
from engine.data.dataset_plan import DatasetOptions, plan_dataset
from engine.data.image_mean import compute_image_mean
from engine.data.resize_modes import resize_to
from engine.solvers import create_solver
from proto import caffe_pb2

COLOURS = {"blue": (30, 40, 200), "green": (30, 200, 40), "red": (200, 40, 30)}  # RGB


def make_classes(
    root: Path,
    per_class: int = 12,
    size=(10, 14),
    seed: int = 0,
    nested: bool = True,
    existing_out: bool = False,
) -> None:
    """Three separable classes (a dominant colour each, with noise), files of mixed kinds and case;
    with ``existing_out`` an (empty) ``out`` folder beside them too."""
    if existing_out:
        (root.parent / "out").mkdir()
    rng = np.random.default_rng(seed)
    for name, colour in COLOURS.items():
        for i in range(per_class):
            folder = root / name / ("deep" if nested and i % 4 == 0 else "")
            folder.mkdir(parents=True, exist_ok=True)
            noise = rng.integers(-30, 30, (*size, 3))
            pixels = np.clip(np.array(colour) + noise, 0, 255).astype(np.uint8)
            ext = [".png", ".PNG", ".bmp", ".Jpeg"][i % 4]
            Image.fromarray(pixels).save(folder / f"img {i}{ext}")
    (root / "red" / "notes.txt").write_text("not an image")


def records(db: Path) -> list[tuple[bytes, caffe_pb2.Datum]]:
    env = lmdb.open(str(db), readonly=True, lock=False)
    with env.begin() as txn:
        out = [(bytes(k), caffe_pb2.Datum.FromString(v)) for k, v in txn.cursor()]
    env.close()
    return out


def test_layout_counts_keys_and_mean(tmp_path, capsys):
    make_classes(tmp_path / "pics")
    out = tmp_path / "ds"
    rc = main.main(
        ["dataset", str(tmp_path / "pics"), str(out), "--size", "8x6", "--val", "25", "--test", "25"]
    )
    assert rc == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "dataset.json", "labels.txt", "mean.binaryproto", "test.txt", "test_lmdb",
        "train.txt", "train_lmdb", "val.txt", "val_lmdb",
    ]  # fmt: skip
    assert (out / "labels.txt").read_text().splitlines() == ["blue", "green", "red"]
    summary = json.loads((out / "dataset.json").read_text())
    assert summary["counts"] == {
        split: {c: n for c in COLOURS} for split, n in (("test", 3), ("val", 3), ("train", 6))
    }
    assert (summary["size"], summary["channels"], summary["skipped"]) == ([8, 6], 3, [])
    train = records(out / "train_lmdb")
    assert len(train) == 18 and len({d.label for _, d in train}) == 3
    labels_in_order = [d.label for _, d in train]
    assert labels_in_order != sorted(labels_in_order)  # shuffled: a Data layer sees the classes mixed
    for key, datum in train:
        assert (datum.channels, datum.height, datum.width, datum.encoded) == (3, 8, 6, False)
        folder = key[9:].decode().split("/")[0]
        assert ["blue", "green", "red"].index(folder) == datum.label
        pixels = np.frombuffer(datum.data, np.uint8).reshape(3, 8, 6).astype(int)
        assert int(np.argmax(pixels.mean((1, 2)))) == datum.label  # BGR: channel 0 is blue, label 0
    train_list = (out / "train.txt").read_text().splitlines()
    assert len(train_list) == 18 and all(Path(line.rsplit(" ", 1)[0]).exists() for line in train_list)
    mean = caffe_pb2.BlobProto.FromString((out / "mean.binaryproto").read_bytes())
    again = compute_image_mean(out / "train_lmdb", lambda s: None)
    assert mean == again  # the same float32 sums in the same order
    said = capsys.readouterr()
    assert "3 classes, 36 images -> 8x6x3 (squash)" in said.err and "36/36 100%" in said.err
    assert said.out.startswith(f"wrote {out}: train_lmdb 18, val_lmdb 9, test_lmdb 9")


def test_same_seed_same_data_set_other_seed_other_split(tmp_path):
    make_classes(tmp_path / "pics")
    lists = []
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        assert (
            main.main(
                ["dataset", str(tmp_path / "pics"), str(tmp_path / name), "--seed", str(seed), "--quiet"]
            )
            == 0
        )
        lists.append((tmp_path / name / "train.txt").read_text())
    assert lists[0] == lists[1] and lists[0] != lists[2]


def test_gray_encodings_default_size_and_class_limits(tmp_path):
    make_classes(tmp_path / "pics", per_class=12)
    for extra in (["--gray"], ["--encoding", "png"], ["--encoding", "jpg"]):
        out = tmp_path / extra[-1]
        args = ["dataset", str(tmp_path / "pics"), str(out), "--max-per-class", "8", "--val", "25", *extra]
        assert main.main([*args, "--quiet"]) == 0
        summary = json.loads((out / "dataset.json").read_text())
        assert summary["size"] == [10, 14]  # the first image's
        assert summary["counts"]["train"] == dict.fromkeys(COLOURS, 6)
        _, datum = records(out / "train_lmdb")[0]
        if extra == ["--gray"]:
            assert (datum.channels, len(datum.data)) == (1, 140)
        else:
            assert datum.encoded and datum.data[:4] in (b"\x89PNG", b"\xff\xd8\xff\xe0", b"\xff\xd8\xff\xdb")
    (tmp_path / "pics" / "tiny").mkdir()
    Image.fromarray(np.zeros((10, 14, 3), np.uint8)).save(tmp_path / "pics" / "tiny" / "only.png")
    assert (
        main.main(["dataset", str(tmp_path / "pics"), str(tmp_path / "m"), "--min-per-class", "2", "--quiet"])
        == 0
    )
    summary = json.loads((tmp_path / "m" / "dataset.json").read_text())
    assert summary["labels"] == ["blue", "green", "red"] and "tiny" in summary["dropped_classes"]


def test_val_folder_replaces_the_validation_share(tmp_path):
    make_classes(tmp_path / "pics")
    make_classes(tmp_path / "held", per_class=2, seed=9)
    args = [
        "dataset",
        str(tmp_path / "pics"),
        str(tmp_path / "ds"),
        "--val-folder",
        str(tmp_path / "held"),
        "--quiet",
    ]
    assert main.main(args) == 0
    summary = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    assert summary["counts"]["val"] == dict.fromkeys(COLOURS, 2)
    assert summary["counts"]["train"] == dict.fromkeys(COLOURS, 12)


def test_an_unreadable_image_is_skipped_and_said(tmp_path):
    make_classes(tmp_path / "pics")
    (tmp_path / "pics" / "red" / "broken.png").write_bytes(b"\x89PNG not really")
    assert main.main(["dataset", str(tmp_path / "pics"), str(tmp_path / "ds"), "--val", "0", "--quiet"]) == 0
    summary = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    (skipped,) = summary["skipped"]
    assert skipped["path"].endswith("broken.png") and "cannot decode" in skipped["reason"]
    assert summary["counts"]["train"] == dict.fromkeys(COLOURS, 12)
    assert not (tmp_path / "ds" / "val_lmdb").exists()  # no validation share asked for


@pytest.mark.parametrize(
    "setup, args, message",
    [
        (lambda p: (p / "pics").mkdir(), [], "no class subfolders"),
        (lambda p: (p / "pics" / "a").mkdir(parents=True), [], "no class subfolder with enough images"),
        (lambda p: make_classes(p / "pics", 3), ["--val", "60", "--test", "50"], "together under 100"),
        (lambda p: make_classes(p / "pics", 3), ["--size", "8by8"], "expected HxW"),
        (lambda p: make_classes(p / "pics", 3, existing_out=True), [], "already exists"),
        (lambda p: make_classes(p / "pics", 3), ["--val-folder", "nowhere"], "no such folder"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(tmp_path, capsys, setup, args, message):
    setup(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    rc = main.main(["dataset", str(tmp_path / "pics"), str(tmp_path / "out"), "--quiet", *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and message in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_force_replaces_and_a_cancel_or_interrupt_leaves_the_old_one(tmp_path):
    make_classes(tmp_path / "pics")
    out = tmp_path / "ds"
    assert main.main(["dataset", str(tmp_path / "pics"), str(out), "--quiet"]) == 0
    first = (out / "train.txt").read_text()
    plan = plan_dataset(tmp_path / "pics", DatasetOptions(seed=3))
    calls = iter(range(10**6))
    with pytest.raises(Cancelled):  # cancelled on the sixth image
        build_dataset(plan, out, force=True, cancelled=lambda: next(calls) >= 5)
    assert (out / "train.txt").read_text() == first and sorted(p.name for p in tmp_path.iterdir()) == [
        "ds",
        "pics",
    ]

    def interrupt(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_dataset(plan, tmp_path / "other", progress=interrupt)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "pics"]
    assert main.main(["dataset", str(tmp_path / "pics"), str(out), "--seed", "3", "--force", "--quiet"]) == 0
    assert (out / "train.txt").read_text() != first


def test_force_replaces_only_a_data_set_or_an_empty_folder(tmp_path, capsys):
    """--force over a folder of the user's (or the one holding the images) was deleted with it."""
    make_classes(tmp_path / "pics")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's")
    for out in (mine, tmp_path):
        assert main.main(["dataset", str(tmp_path / "pics"), str(out), "--force", "--quiet"]) == 2
    err = capsys.readouterr().err.splitlines()
    hint = "(--force replaces only a data set, or an empty folder)"
    assert err[-2] == f"error: {mine} already exists and is not a data set {hint}"
    assert err[-1].startswith(f"error: {tmp_path} holds the images")
    assert (mine / "notes.txt").read_text() == "the user's"
    (tmp_path / "empty").mkdir()
    assert main.main(["dataset", str(tmp_path / "pics"), str(tmp_path / "empty"), "--force", "--quiet"]) == 0
    assert (tmp_path / "empty" / "dataset.json").is_file()


def test_resize_modes():
    image = np.arange(2 * 4 * 8, dtype=np.uint8).reshape(2, 4, 8)  # wide: 4 high, 8 wide
    assert resize_to(image, 6, 6, "squash").shape == (2, 6, 6)
    crop = resize_to(image, 4, 4, "crop")  # height already fits: the centre 4 columns
    np.testing.assert_array_equal(crop, image[:, :, 2:6])
    rng = np.random.default_rng(0)
    fill = resize_to(image, 8, 8, "fill", rng)  # fits at 4x8: two noise rows above and below
    np.testing.assert_array_equal(fill[:, 2:6], image)
    assert not np.array_equal(fill[:, :2], fill[:, 6:])
    half = resize_to(image, 6, 6, "half_crop", rng)  # scale to 1/mean(8/6, 4/6): 4x8 -> 4x8, cut to 6, pad 1
    assert half.shape == (2, 6, 6)
    np.testing.assert_array_equal(half[:, 1:5], image[:, :, 1:7])
    tall = resize_to(image.transpose(0, 2, 1).copy(), 4, 4, "crop")  # 8 high, 4 wide: centre rows
    np.testing.assert_array_equal(tall, image.transpose(0, 2, 1)[:, 2:6])


SOLVER = """
net: "net.prototxt" base_lr: 0.05 momentum: 0.9 lr_policy: "fixed" max_iter: 200
test_iter: 3 test_interval: 200 random_seed: 1 snapshot_prefix: "s" test_initialization: false
"""
NET = """
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TRAIN }
        transform_param { scale: 0.00390625 mean_file: "ds/mean.binaryproto" }
        data_param { source: "ds/train_lmdb" backend: LMDB batch_size: 16 } }
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TEST }
        transform_param { scale: 0.00390625 mean_file: "ds/mean.binaryproto" }
        data_param { source: "ds/test_lmdb" backend: LMDB batch_size: 10 } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "fc" type: "InnerProduct" bottom: "conv" top: "fc"
        inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "acc" type: "Accuracy" bottom: "fc" bottom: "label" top: "acc" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc" bottom: "label" top: "loss" }
"""


def test_a_small_net_learns_the_classes_of_a_made_data_set(tmp_path, monkeypatch):
    make_classes(tmp_path / "pics", per_class=30)
    monkeypatch.chdir(tmp_path)
    args = ["dataset", "pics", "ds", "--size", "8x8", "--val", "10", "--test", "34", "--quiet", "--seed", "2"]
    assert main.main(args) == 0
    (tmp_path / "net.prototxt").write_text(NET)
    param = text_format.Parse(SOLVER, caffe_pb2.SolverParameter())
    param.net = str(tmp_path / "net.prototxt")
    solver = create_solver(param, log_fn=lambda s: None)
    scores: list[dict[str, float]] = []
    solver.listeners.append(lambda e: scores.append(e.scores) if isinstance(e, events.Tested) else None)
    try:
        solver.step(200)
        solver.test_all()
    finally:
        solver.net.close()
        for net in solver.test_nets:
            net.close()
    assert scores and scores[-1]["acc"] > 0.8  # chance is 1/3; the classes are a colour apart
