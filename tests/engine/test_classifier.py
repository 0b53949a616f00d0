"""Classifier and Detector against a numpy reference on a tiny net with known weights.

The reference crops, preprocesses and classifies by hand: crop origins are worked out for the
sizes used here (pycaffe truncates centre origins toward zero), preprocessing is transpose ->
channel swap -> * raw_scale -> - mean -> * input_scale, and the net is one InnerProduct and a
Softmax.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import engine as caffe

DEPLOY = """
name: "tiny_classifier"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 4 dim: 3 dim: 4 dim: 4 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 5 } }
layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }
"""

MEAN = np.array([100.0, 120.0, 90.0], dtype=np.float32)
SWAP = (2, 1, 0)
RAW_SCALE = 255.0
INPUT_SCALE = 0.01


@pytest.fixture
def model(tmp_path):
    """The deploy file and a .caffemodel holding seeded weights; returns (deploy, weights, W, b)."""
    deploy = tmp_path / "deploy.prototxt"
    deploy.write_text(DEPLOY)
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((5, 48)).astype(np.float32)
    bias = rng.standard_normal(5).astype(np.float32)
    net = caffe.Net(str(deploy), caffe.TEST)
    net.params["ip"][0].data[...] = weight
    net.params["ip"][1].data[...] = bias
    weights = tmp_path / "tiny.caffemodel"
    net.save(str(weights))
    return str(deploy), str(weights), weight.astype(np.float64), bias.astype(np.float64)


def reference_probs(crop, weight, bias, mean=MEAN, swap=SWAP, raw_scale=RAW_SCALE, input_scale=INPUT_SCALE):
    x = crop.astype(np.float64).transpose(2, 0, 1)
    if swap is not None:
        x = x[list(swap)]
    x = x * raw_scale
    if mean is not None:
        x = x - np.asarray(mean, dtype=np.float64)[:, None, None]
    x = x * input_scale
    logits = weight @ x.ravel() + bias
    e = np.exp(logits - logits.max())
    return e / e.sum()


def images(count, height, width, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.random((height, width, 3)).astype(np.float32) for _ in range(count)]


def classifier(model, **kwargs):
    deploy, weights, _, _ = model
    options = dict(mean=MEAN, raw_scale=RAW_SCALE, channel_swap=SWAP, input_scale=INPUT_SCALE)
    options.update(kwargs)
    return caffe.Classifier(deploy, weights, **options)


# 7 x 6 images, 4 x 4 crops: corners at rows {0, 3} x cols {0, 2}; the centre at (int(1.5), 1) = (1, 1)
ORIGINS_7x6 = [(0, 0), (0, 2), (3, 0), (3, 2), (1, 1)]


def test_predict_with_oversample_averages_ten_crops(model):
    _, _, weight, bias = model
    clf = classifier(model, image_dims=(7, 6))
    inputs = images(2, 7, 6)  # already image_dims: the resize keeps them as they are
    got = clf.predict(inputs)  # oversample is the default
    assert got.shape == (2, 5)
    for image, row in zip(inputs, got):
        crops = [image[t : t + 4, x : x + 4] for t, x in ORIGINS_7x6]
        crops += [c[:, ::-1] for c in crops]  # the mirrored five
        want = np.mean([reference_probs(c, weight, bias) for c in crops], axis=0)
        np.testing.assert_allclose(row, want, rtol=1e-5, atol=1e-7)


def test_predict_without_oversample_uses_the_centre_crop(model):
    _, _, weight, bias = model
    clf = classifier(model, image_dims=(7, 6))
    inputs = images(3, 7, 6, seed=1)
    got = clf.predict(inputs, oversample=False)
    assert got.shape == (3, 5)
    for image, row in zip(inputs, got):
        np.testing.assert_allclose(row, reference_probs(image[1:5, 1:5], weight, bias), rtol=1e-5, atol=1e-7)
    # the two modes differ on non-symmetric inputs
    assert not np.allclose(got, clf.predict(inputs))


def test_predict_resizes_to_image_dims_first(model):
    _, _, weight, bias = model
    clf = classifier(model, image_dims=(7, 6))
    inputs = images(1, 9, 11, seed=2)
    got = clf.predict(inputs, oversample=False)
    resized = caffe.io.resize_image(inputs[0], (7, 6))
    np.testing.assert_allclose(got[0], reference_probs(resized[1:5, 1:5], weight, bias), rtol=1e-5, atol=1e-7)


def test_default_image_dims_are_the_input_size(model):
    _, _, weight, bias = model
    clf = classifier(model, mean=None, channel_swap=None, input_scale=None, raw_scale=None)
    assert list(clf.image_dims) == [4, 4] and list(clf.crop_dims) == [4, 4]
    image = images(1, 4, 4, seed=3)[0]
    got = clf.predict([image])  # all five crops are the whole image; five of the ten mirrored
    plain = dict(mean=None, swap=None, raw_scale=1.0, input_scale=1.0)
    want = (
        reference_probs(image, weight, bias, **plain) + reference_probs(image[:, ::-1], weight, bias, **plain)
    ) / 2
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-7)


def test_classifier_needs_an_input_blob(tmp_path):
    path = tmp_path / "no_input.prototxt"
    path.write_text('layer { name: "d" type: "DummyData" top: "d" dummy_data_param { shape { dim: 1 } } }')
    with pytest.raises(ValueError, match="Classifier needs a net with an input blob"):
        caffe.Classifier(str(path), None)


# ------------------------------------------------------------------------------------------ Detector


@pytest.fixture
def picture(tmp_path):
    pixels = np.random.default_rng(7).integers(0, 256, size=(10, 12, 3), dtype=np.uint8)
    path = tmp_path / "picture.png"
    Image.fromarray(pixels).save(path)
    return str(path), pixels.astype(np.float32) / 255


def test_detect_windows_warps_each_window(model, picture):
    deploy, weights, weight, bias = model
    filename, image = picture
    det = caffe.Detector(
        deploy, weights, mean=MEAN, raw_scale=RAW_SCALE, channel_swap=SWAP, input_scale=INPUT_SCALE
    )
    windows = [np.array([0, 0, 6, 8]), np.array([2, 3, 10, 12]), np.array([4, 4, 8, 8])]
    detections = det.detect_windows([(filename, windows[:2]), (filename, windows[2:])])
    assert [d["filename"] for d in detections] == [filename] * 3
    assert all(d["window"] is w for d, w in zip(detections, windows))
    for d, (y0, x0, y1, x1) in zip(detections, windows):
        warped = caffe.io.resize_image(image[y0:y1, x0:x1], (4, 4))
        np.testing.assert_allclose(
            d["prediction"], reference_probs(warped, weight, bias), rtol=1e-5, atol=1e-6
        )


def test_context_pad_crop_fills_outside_with_the_raw_mean(model, picture):
    deploy, weights, _, _ = model
    _, image = picture
    det = caffe.Detector(deploy, weights, mean=MEAN, raw_scale=RAW_SCALE, channel_swap=SWAP, context_pad=1)
    assert list(det.crop_dims) == [4, 4, 3]
    # Window rows/cols 0..4 with 1 pixel of context in a 4-pixel input: scale 2 about the centre 2.5
    # gives the box -2..8 (11 pixels, 4/11 input pixels each); 2 pixels lie outside the image, i.e.
    # round(8/11) = 1 input pixel of mean; the 9 pixels inside (rows 0..8) fill round(36/11) = 3.
    crop = det.crop(image, np.array([0, 0, 4, 4]))
    assert crop.shape == (4, 4, 3)
    raw_mean = MEAN[::-1] / RAW_SCALE  # channel swap undone, raw scale divided out
    np.testing.assert_allclose(crop[0, :], np.tile(raw_mean, (4, 1)), rtol=1e-6)
    np.testing.assert_allclose(crop[:, 0], np.tile(raw_mean, (4, 1)), rtol=1e-6)
    np.testing.assert_allclose(crop[1:, 1:], caffe.io.resize_image(image[0:8, 0:8], (3, 3)), rtol=1e-6)
    # without context the window is cut as it is
    plain = caffe.Detector(deploy, weights)
    np.testing.assert_array_equal(plain.crop(image, np.array([1, 2, 5, 9])), image[1:5, 2:9])


def test_selective_search_says_it_is_not_available(model):
    deploy, weights, _, _ = model
    det = caffe.Detector(deploy, weights)
    with pytest.raises(ImportError, match="not available"):
        det.detect_selective_search(["picture.png"])
