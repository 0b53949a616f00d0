"""`main.py classify` (engine/model_use/classify.py) against pycaffe's Classifier built by hand
with classify.py's options, on a small net and images made here; and the transform a train_val
net's data layer applies, carried to classification."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import engine as caffe
import main
from engine.data.transformer import DataTransformer
from engine.model_use import classify, preprocess
from proto import caffe_pb2, textio
from proto.binaryio import write_blob

LAYERS = """
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 4 kernel_size: 3 } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip" inner_product_param { num_output: 7 } }
"""
DEPLOY = (
    'layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 dim: 6 dim: 6 } } }'
    + LAYERS
    + 'layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }\n'
)
TRANSFORM = "transform_param { crop_size: 6 mean_value: 100 mean_value: 110 mean_value: 120 scale: 0.02 }"
TRAIN_VAL = (
    f'layer {{ name: "d" type: "Data" top: "data" top: "label" include {{ phase: TEST }} {TRANSFORM}\n'
    '  data_param { source: "absent_lmdb" batch_size: 5 } }'
    + LAYERS
    + 'layer { name: "accuracy" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" }\n'
    'layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }\n'
)
MEAN = np.array([100.0, 110.0, 120.0], np.float32)
# Two computations of the same float32 forward pass (batched differently, images decoded by two
# loaders that agree on PNGs): they differ by float32 rounding, far below 1e-5 on probabilities.
TOLERANCE = 1e-5


@pytest.fixture
def model(tmp_path: Path) -> tuple[Path, Path]:
    deploy = tmp_path / "deploy.prototxt"
    deploy.write_text(DEPLOY)
    net = caffe.Net(str(deploy), caffe.TEST)
    rng = np.random.default_rng(3)
    for blobs in net.params.values():
        for blob in blobs:
            blob.data[...] = rng.standard_normal(blob.data.shape) * 0.5
    weights = tmp_path / "w.caffemodel"
    net.save(str(weights))
    return deploy, weights


@pytest.fixture
def images(tmp_path: Path) -> list[Path]:
    rng = np.random.default_rng(7)
    folder = tmp_path / "images"
    folder.mkdir()
    paths = []
    for i, (h, w) in enumerate([(9, 11), (8, 8), (12, 7)]):
        path = folder / f"im{i}.png"
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
        paths.append(path)
    return paths


def run_cli(tmp_path: Path, *argv: str) -> np.ndarray:
    out = tmp_path / "p.npy"
    assert main.main(["classify", *argv, "--out", str(out)]) == 0
    return np.load(out)


@pytest.mark.parametrize("center_only", [False, True], ids=["ten-crops", "centre"])
def test_predictions_equal_classifiers(tmp_path, model, images, center_only) -> None:
    deploy, weights = model
    flags = ["--mean-value", "100,110,120", "--input-scale", "0.02", "--raw-scale", "255"]
    flags += ["--channel-swap", "2,1,0", "--images-dim", "10,9"]
    flags += ["--center-only"] if center_only else []
    got = run_cli(tmp_path, "--model", str(deploy), "--weights", str(weights), *flags, str(images[0].parent))
    clf = caffe.Classifier(
        str(deploy), str(weights), image_dims=(10, 9), mean=MEAN, input_scale=0.02, raw_scale=255.0,
        channel_swap=(2, 1, 0),
    )  # fmt: skip
    want = clf.predict([caffe.io.load_image(str(p)) for p in images], oversample=not center_only)
    assert got.shape == (3, 7)
    np.testing.assert_allclose(got, want, atol=TOLERANCE, rtol=0)
    assert not np.allclose(got[0], got[1], atol=1e-3)  # the images are told apart


def test_a_train_val_net_classifies_with_its_data_layers_transform(tmp_path, model, images) -> None:
    deploy, weights = model
    train_val = tmp_path / "train_val.prototxt"
    train_val.write_text(TRAIN_VAL)
    got = run_cli(tmp_path, "--model", str(train_val), "--weights", str(weights), *map(str, images))
    clf = caffe.Classifier(
        str(deploy), str(weights), mean=MEAN, input_scale=0.02, raw_scale=255.0, channel_swap=(2, 1, 0)
    )
    want = clf.predict([caffe.io.load_image(str(p)) for p in images])
    np.testing.assert_allclose(got, want, atol=TOLERANCE, rtol=0)


def test_the_carried_transform_preprocesses_as_the_data_layer(tmp_path) -> None:
    # A mean image of the data's full 8x8 size and a 6x6 crop: the centre crop the Classifier
    # preprocesses equals what Caffe's data layer makes of the same pixels in the TEST phase.
    rng = np.random.default_rng(1)
    mean = rng.uniform(0, 255, (1, 3, 8, 8))
    blob = caffe_pb2.BlobProto()
    blob.shape.dim.extend(mean.shape)
    blob.data.extend(mean.ravel())
    write_blob(tmp_path / "mean.binaryproto", blob)
    transform = 'transform_param { crop_size: 6 mean_file: "mean.binaryproto" scale: 0.02 }'
    net = tmp_path / "train_val.prototxt"
    net.write_text(TRAIN_VAL.replace(TRANSFORM, transform))
    model = classify.open_classifier(net, None, image_dims=(8, 8))
    pixels = rng.integers(0, 256, (3, 8, 8), dtype=np.uint8)  # C, H, W in BGR, as the datum holds it
    image = (pixels.transpose(1, 2, 0)[:, :, ::-1] / 255.0).astype(np.float32)  # as load_image gives it
    got = model.classifier.transformer.preprocess("data", image[1:7, 1:7])
    param = textio.read_net(net).layer[0].transform_param
    param.mean_file = str(tmp_path / "mean.binaryproto")
    want = DataTransformer(param, caffe_pb2.TEST)(pixels[None])[0]
    # pixel/255*255 in float32 is off by at most an ulp of 255 before the 0.02 scale
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=0)


def test_fit_mean_cuts_the_centre_or_averages() -> None:
    mean = np.arange(3 * 8 * 8, dtype=np.float32).reshape(3, 8, 8)
    np.testing.assert_array_equal(preprocess.fit_mean(mean, (1, 3, 6, 6)), mean[:, 1:7, 1:7])
    np.testing.assert_allclose(preprocess.fit_mean(mean, (1, 3, 9, 9)), mean.reshape(3, -1).mean(1))


def test_an_image_that_does_not_decode_is_named_and_the_run_goes_on(tmp_path, model, images, capsys) -> None:
    deploy, weights = model
    bad = images[0].parent / "broken.png"
    bad.write_bytes(b"not an image")
    out = tmp_path / "p.npy"
    code = main.main(["classify", "--model", str(deploy), "--weights", str(weights), "--center-only",
                      "--out", str(out), str(images[0].parent)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 2
    errors = [line for line in captured.err.splitlines() if "broken.png" in line]
    assert len(errors) == 1
    assert np.load(out).shape == (3, 7)
    for path in images:
        assert str(path) in captured.out


def test_top_k_with_label_names(tmp_path, model, images, capsys) -> None:
    deploy, weights = model
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"class {c}\n" for c in "abcdefg"))
    listing = tmp_path / "list.txt"
    listing.write_text(f"images/{images[1].name} 3\n")  # relative to the list's folder
    argv = ["--model", str(deploy), "--weights", str(weights), "--labels", str(labels), "--top", "2"]
    got = run_cli(tmp_path, *argv, str(listing))
    out = capsys.readouterr().out
    order = np.argsort(-got[0])
    assert f"1. {got[0][order[0]]:.6f}  class {'abcdefg'[order[0]]}" in out
    assert f"2. {got[0][order[1]]:.6f}  class {'abcdefg'[order[1]]}" in out
    assert "3. " not in out


def test_a_labels_file_of_the_wrong_count_says_so(tmp_path, model, images, capsys) -> None:
    deploy, weights = model
    labels = tmp_path / "labels.txt"
    labels.write_text("a\nb\nc\n")
    code = main.main(["classify", "--model", str(deploy), "--weights", str(weights),
                      "--labels", str(labels), str(images[0])])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {labels} names 3 classes but the model gives 7 outputs"


def test_inspection_gives_every_layer_with_its_statistics(model, images) -> None:
    from engine.model_use.inspect import inspect

    deploy, weights = model
    opened = classify.open_classifier(deploy, str(weights), mean=MEAN, input_scale=0.02)
    image = caffe.io.load_image(str(images[1]))
    seen = inspect(opened, image)
    assert [look.name for look in seen.layers] == ["data", "conv", "relu", "ip", "prob"]
    want = classify.predict(opened, [image], oversample=False)[0]
    np.testing.assert_allclose(seen.probabilities, want, atol=TOLERANCE, rtol=0)
    assert [i for i, _ in seen.top(3)] == list(np.argsort(-want)[:3])
    ip = seen.layer("ip")
    assert ip is not None and ip.activation.shape == (7,)
    net = caffe.Net(str(deploy), caffe.TEST, weights=str(weights))
    np.testing.assert_array_equal(ip.weights[0], net.params["ip"][0].data)
    w = net.params["ip"][0].data.astype(np.float64)
    s = ip.weight_stats[0]
    # float64 statistics of the same float32 values
    assert (s.mean, s.min, s.max) == pytest.approx((w.mean(), w.min(), w.max()), abs=1e-9)
    assert s.std == pytest.approx(w.std(), abs=1e-9) and s.counts.sum() == w.size
    conv = seen.layer("conv")
    assert conv is not None and conv.activation.shape == (4, 4, 4)
