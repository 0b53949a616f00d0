"""engine.pycaffe.io: pycaffe's caffe.io surface (proto conversion, Transformer, image helpers)."""

import numpy as np
import pytest
from PIL import Image

from engine import io as cio
from proto import caffe_pb2


def test_blobproto_round_trip_any_rank_with_diff():
    rng = np.random.default_rng(0)
    arr = rng.standard_normal((2, 3, 4))
    diff = rng.standard_normal((2, 3, 4))
    blob = cio.array_to_blobproto(arr, diff)
    assert list(blob.shape.dim) == [2, 3, 4]
    assert not blob.HasField("num")
    np.testing.assert_allclose(cio.blobproto_to_array(blob), arr)
    np.testing.assert_allclose(cio.blobproto_to_array(blob, return_diff=True), diff)


def test_blobproto_legacy_4d_fields_win_over_shape():
    blob = caffe_pb2.BlobProto(num=1, channels=2, height=1, width=3)
    blob.data.extend(range(6))
    out = cio.blobproto_to_array(blob)
    assert out.shape == (1, 2, 1, 3)
    np.testing.assert_array_equal(out.ravel(), np.arange(6))
    blob.shape.dim.extend([6])  # the legacy fields are checked first, as in pycaffe
    assert cio.blobproto_to_array(blob).shape == (1, 2, 1, 3)


def test_blobprotovector_string_round_trip():
    arrays = [np.arange(6.0).reshape(1, 2, 3), np.full((2, 2), -1.5)]
    serialized = cio.arraylist_to_blobprotovector_str(arrays)
    assert isinstance(serialized, bytes)
    back = cio.blobprotovector_str_to_arraylist(serialized)
    assert len(back) == 2
    for a, b in zip(arrays, back, strict=True):
        np.testing.assert_array_equal(a, b)


def test_datum_uint8_goes_to_bytes():
    arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    datum = cio.array_to_datum(arr, label=7)
    assert datum.data == arr.tobytes() and len(datum.float_data) == 0
    assert (datum.channels, datum.height, datum.width, datum.label) == (2, 3, 4, 7)
    back = cio.datum_to_array(datum)
    assert back.dtype == np.uint8
    np.testing.assert_array_equal(back, arr)


def test_datum_float_goes_to_float_data_and_label_optional():
    arr = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 2, 2)
    datum = cio.array_to_datum(arr)
    assert datum.data == b"" and len(datum.float_data) == 12
    assert not datum.HasField("label")
    np.testing.assert_allclose(cio.datum_to_array(datum), arr)


@pytest.mark.parametrize("shape", [(4,), (2, 3), (1, 2, 3, 4)])
def test_datum_rejects_non_3d(shape):
    with pytest.raises(ValueError, match="Incorrect array shape"):
        cio.array_to_datum(np.zeros(shape))


def _imagenet_style_transformer(mean):
    tf = cio.Transformer({"data": (1, 3, 4, 5)})
    tf.set_transpose("data", (2, 0, 1))
    tf.set_channel_swap("data", (2, 1, 0))
    tf.set_raw_scale("data", 255.0)
    tf.set_mean("data", mean)
    tf.set_input_scale("data", 0.5)
    return tf


def test_preprocess_matches_hand_computation_and_deprocess_inverts():
    rng = np.random.default_rng(1)
    image = rng.random((4, 5, 3))  # H x W x RGB, already the input size: no resize
    mean = np.array([10.0, 20.0, 30.0])
    tf = _imagenet_style_transformer(mean)
    out = tf.preprocess("data", image)
    expected = np.empty((3, 4, 5))
    for c in range(3):
        src = 2 - c  # BGR
        for y in range(4):
            for x in range(5):
                expected[c, y, x] = (image[y, x, src] * 255.0 - mean[c]) * 0.5
    assert out.dtype == np.float32 and out.shape == (3, 4, 5)
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    np.testing.assert_allclose(tf.deprocess("data", out[np.newaxis]), image, atol=1e-5)


def test_preprocess_full_mean_and_does_not_modify_input():
    rng = np.random.default_rng(2)
    tf = cio.Transformer({"data": (1, 5, 3, 4)})
    mean = rng.random((5, 3, 4))
    tf.set_mean("data", mean)
    tf.set_transpose("data", (2, 0, 1))
    tf.set_raw_scale("data", 2.0)
    same = rng.random((3, 4, 5)).astype(np.float32)
    copy = same.copy()
    out = tf.preprocess("data", same)
    np.testing.assert_array_equal(same, copy)
    np.testing.assert_allclose(out, same.transpose(2, 0, 1) * 2.0 - mean, rtol=1e-6)


def test_preprocess_resizes_to_input_dims():
    tf = cio.Transformer({"data": (1, 3, 6, 8)})
    tf.set_transpose("data", (2, 0, 1))
    out = tf.preprocess("data", np.random.default_rng(3).random((3, 4, 3)))
    assert out.shape == (3, 6, 8)


def test_set_mean_errors():
    tf = cio.Transformer({"data": (1, 3, 4, 5)})
    with pytest.raises(ValueError, match="Mean channels incompatible with input."):
        tf.set_mean("data", np.zeros(4))
    with pytest.raises(ValueError, match="Mean shape invalid"):
        tf.set_mean("data", np.zeros((1, 3, 4, 5)))
    with pytest.raises(ValueError, match="Mean shape incompatible with input shape."):
        tf.set_mean("data", np.zeros((3, 5, 4)))
    with pytest.raises(ValueError, match="Mean shape incompatible"):
        tf.set_mean("data", np.zeros((4, 5)))  # 2-D is read as 1 x H x W, but the input has 3 channels
    gray = cio.Transformer({"data": (1, 1, 4, 5)})
    gray.set_mean("data", np.ones((4, 5)))  # accepted for a 1-channel input
    gray.set_transpose("data", (2, 0, 1))
    out = gray.preprocess("data", np.ones((4, 5, 1)))
    assert out.shape == (1, 4, 5)
    np.testing.assert_allclose(out, 0.0)


def test_transformer_setter_errors():
    tf = cio.Transformer({"data": (1, 3, 4, 5)})
    with pytest.raises(Exception, match="not one of the net inputs"):
        tf.set_raw_scale("label", 1.0)
    with pytest.raises(Exception, match="Transpose order"):
        tf.set_transpose("data", (1, 0))
    with pytest.raises(Exception, match="Channel swap"):
        tf.set_channel_swap("data", (1, 0))


def test_oversample_order_and_mirrors():
    h, w, k = 5, 6, 2
    im = np.arange(h * w * k, dtype=np.float64).reshape(h, w, k)
    im2 = -im
    crops = cio.oversample([im, im2], (3, 4))
    assert crops.shape == (20, 3, 4, 2) and crops.dtype == np.float32
    centre_top, centre_left = int(h / 2 - 1.5), int(w / 2 - 2)  # pycaffe truncates the centre box
    origins = [(0, 0), (0, w - 4), (h - 3, 0), (h - 3, w - 4), (centre_top, centre_left)]
    for n, image in enumerate([im, im2]):
        for i, (t, x) in enumerate(origins):
            crop = image[t : t + 3, x : x + 4]
            np.testing.assert_array_equal(crops[10 * n + i], crop)
            np.testing.assert_array_equal(crops[10 * n + 5 + i], crop[:, ::-1])


def test_resize_image_keeps_channels_range_and_constants():
    rng = np.random.default_rng(4)
    for k in (1, 3, 5):
        im = rng.random((4, 6, k)) * 3 - 1
        out = cio.resize_image(im, (7, 3))
        assert out.shape == (7, 3, k) and out.dtype == np.float32
        assert out.min() >= im.min() - 1e-6 and out.max() <= im.max() + 1e-6
    const = cio.resize_image(np.full((2, 2, 3), 0.25), (4, 5))
    assert const.shape == (4, 5, 3)
    np.testing.assert_array_equal(const, 0.25)


def test_resize_image_bilinear_and_nearest_values():
    im = np.array([[0.0, 1.0], [2.0, 3.0]])[:, :, None]
    same = cio.resize_image(im, (2, 2))
    np.testing.assert_allclose(same, im)
    up = cio.resize_image(im, (4, 4))[:, :, 0]
    # pixel centres map to pixel centres: output x=1 sits at source 0.25
    np.testing.assert_allclose(up[0], [0.0, 0.25, 0.75, 1.0])
    np.testing.assert_allclose(up[:, 0], [0.0, 0.5, 1.5, 2.0])
    near = cio.resize_image(im, (4, 4), interp_order=0)[:, :, 0]
    np.testing.assert_array_equal(near, np.kron(im[:, :, 0], np.ones((2, 2))))
    with pytest.raises(ValueError):
        cio.resize_image(im, (4, 4), interp_order=3)


def test_load_image_rgb_rgba_and_gray(tmp_path):
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3) * 10
    Image.fromarray(rgb, "RGB").save(tmp_path / "rgb.png")
    loaded = cio.load_image(str(tmp_path / "rgb.png"))
    assert loaded.dtype == np.float32 and loaded.shape == (2, 3, 3)
    np.testing.assert_allclose(loaded, rgb / 255.0, rtol=1e-6)

    rgba = np.concatenate([rgb, np.full((2, 3, 1), 128, np.uint8)], axis=2)
    Image.fromarray(rgba, "RGBA").save(tmp_path / "rgba.png")
    np.testing.assert_allclose(cio.load_image(str(tmp_path / "rgba.png")), rgb / 255.0, rtol=1e-6)

    gray = np.array([[0, 51], [102, 255]], dtype=np.uint8)
    Image.fromarray(gray, "L").save(tmp_path / "gray.png")
    as_color = cio.load_image(str(tmp_path / "gray.png"))
    assert as_color.shape == (2, 2, 3)
    for c in range(3):
        np.testing.assert_allclose(as_color[:, :, c], gray / 255.0, rtol=1e-6)
    as_gray = cio.load_image(str(tmp_path / "gray.png"), color=False)
    assert as_gray.shape == (2, 2, 1)
    np.testing.assert_allclose(as_gray[:, :, 0], gray / 255.0, rtol=1e-6)
