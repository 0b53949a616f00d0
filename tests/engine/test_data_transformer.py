"""Caffe's DataTransformer: each transform against a per-pixel reference written from
data_transformer.cpp, TRAIN's random crops and mirrors, TEST's centre crop, and its errors."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format

from engine.data.errors import DataError
from engine.data.transformer import DataTransformer
from proto import caffe_pb2
from proto.binaryio import write_blob

TRAIN, TEST = caffe_pb2.TRAIN, caffe_pb2.TEST


def transformer(text: str, phase: int = TRAIN, dtype=np.float32) -> DataTransformer:
    param = text_format.Parse(text, caffe_pb2.TransformationParameter())
    return DataTransformer(param, phase, dtype)


def reference(x, crop, h_off, w_off, mirror, scale=1.0, mean=None, mean_values=(), dtype=np.float32):
    """Caffe's Transform(datum) for one (C, H, W) item, pixel by pixel."""
    c, h, w = x.shape
    height, width = (crop, crop) if crop else (h, w)
    scale = dtype(scale)
    values = [dtype(v) for v in mean_values] * (c if len(mean_values) == 1 else 1)
    out = np.zeros((c, height, width), dtype)
    for ci in range(c):
        for hi in range(height):
            for wi in range(width):
                element = dtype(x[ci, h_off + hi, w_off + wi])
                wo = width - 1 - wi if mirror else wi
                if mean is not None:
                    out[ci, hi, wo] = (element - dtype(mean[ci, h_off + hi, w_off + wi])) * scale
                elif values:
                    out[ci, hi, wo] = (element - values[ci]) * scale
                else:
                    out[ci, hi, wo] = element * scale
    return out


def unique_pixels(n=1, c=2, h=5, w=6) -> np.ndarray:
    return np.arange(n * c * h * w, dtype=np.float32).reshape(n, c, h, w)


def uint8_batch(n=4, c=3, h=6, w=5, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, c, h, w)).astype(np.uint8)


def find_window(item_out: np.ndarray, x: np.ndarray, crop: int) -> tuple[int, int, bool]:
    """The (h_off, w_off, mirror) that made ``item_out`` from unique-valued ``x``."""
    c, h, w = x.shape
    for h_off in range(h - crop + 1):
        for w_off in range(w - crop + 1):
            for mirror in (False, True):
                if np.array_equal(reference(x, crop, h_off, w_off, mirror), item_out):
                    return h_off, w_off, mirror
    raise AssertionError("the output is no crop/mirror of the input")


def test_empty_transform_is_the_identity_in_the_output_dtype():
    x = uint8_batch()
    out = transformer("")(x)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, x.astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scale_and_mean_values_match_the_reference_bit_for_bit(dtype):
    x = uint8_batch()
    for text, mean_values in [
        ("mean_value: 127.5", (127.5,)),
        ("mean_value: 10 mean_value: 20 mean_value: 30.25", (10, 20, 30.25)),
    ]:
        out = transformer(f"scale: 0.0078125 {text}", TEST, dtype)(x)
        for i in range(len(x)):
            want = reference(x[i], 0, 0, 0, False, 0.0078125, mean_values=mean_values, dtype=dtype)
            np.testing.assert_array_equal(out[i], want)


def test_mean_value_count_must_be_one_or_one_per_channel():
    with pytest.raises(DataError, match="Specify either 1 mean_value or as many as channels: 3"):
        transformer("mean_value: 1 mean_value: 2")(uint8_batch(c=3))


def write_mean(tmp_path, mean: np.ndarray, legacy: bool = True) -> str:
    proto = caffe_pb2.BlobProto()
    if legacy:
        proto.num, (proto.channels, proto.height, proto.width) = 1, mean.shape
    else:
        proto.shape.dim.extend((1, *mean.shape))
    proto.data.extend(mean.ravel().tolist())
    path = tmp_path / "mean.binaryproto"
    write_blob(path, proto)
    return str(path)


def test_mean_file_with_centre_crop_subtracts_the_mean_at_the_source_pixel(tmp_path):
    x = uint8_batch(n=3, c=2, h=7, w=6)
    mean = np.random.default_rng(1).uniform(0, 255, (2, 7, 6)).astype(np.float32)
    out = transformer(f'mean_file: "{write_mean(tmp_path, mean)}" crop_size: 4 scale: 0.5', TEST)(x)
    # Centre: ((7 - 4) // 2, (6 - 4) // 2) = (1, 1).
    for i in range(3):
        np.testing.assert_array_equal(out[i], reference(x[i], 4, 1, 1, False, 0.5, mean=mean))


def test_mean_file_with_random_crop_and_mirror_follows_caffes_order(tmp_path):
    """Crop and mirror pick the pixels; the mean is taken at the unmirrored source position."""
    x = unique_pixels(n=40, c=2, h=5, w=6) % 251
    mean = np.random.default_rng(2).uniform(0, 100, (2, 5, 6)).astype(np.float32)
    t = transformer(
        f'mean_file: "{write_mean(tmp_path, mean, legacy=False)}" crop_size: 3 mirror: true scale: 2'
    )
    out = t(x, np.random.default_rng(3))
    plain = transformer("crop_size: 3 mirror: true")(x, np.random.default_rng(3))  # same draws, no mean
    for i in range(len(x)):
        h_off, w_off, mirror = find_window(plain[i], x[i], 3)
        np.testing.assert_array_equal(out[i], reference(x[i], 3, h_off, w_off, mirror, 2.0, mean=mean))


def test_train_random_crop_covers_every_window_uniformly():
    x = unique_pixels(n=1, c=1, h=4, w=5)
    batch = np.repeat(x, 1200, axis=0)
    out = transformer("crop_size: 3")(batch, np.random.default_rng(4))
    windows = [find_window(o, x[0], 3) for o in out]
    assert not any(m for _, _, m in windows)  # no mirror unless asked
    counts = np.zeros((2, 3))
    for h_off, w_off, _ in windows:
        counts[h_off, w_off] += 1
    assert counts.min() > 1200 / 6 * 0.7 and counts.max() < 1200 / 6 * 1.3


def test_test_phase_crop_is_the_centre_for_every_item():
    x = uint8_batch(n=5, c=1, h=7, w=8)
    out = transformer("crop_size: 4", TEST)(x)  # no generator needed: nothing random
    for i in range(5):
        np.testing.assert_array_equal(out[i], reference(x[i], 4, 1, 2, False))


@pytest.mark.parametrize("phase", [TRAIN, TEST])
def test_mirror_is_random_in_both_phases(phase):
    """Caffe draws do_mirror = mirror && Rand(2) whatever the phase (its TestMirrorTest)."""
    x = unique_pixels(n=1, c=2, h=3, w=4)
    out = transformer("mirror: true", phase)(np.repeat(x, 400, axis=0), np.random.default_rng(5))
    mirrored = np.array([np.array_equal(o, x[0][:, :, ::-1]) for o in out])
    kept = np.array([np.array_equal(o, x[0]) for o in out])
    assert np.all(mirrored | kept)
    assert 0.4 < mirrored.mean() < 0.6


def test_float_inputs_and_items_of_several_sizes_with_a_crop():
    items = [unique_pixels(1, 1, 4, 4)[0] + 0.25, unique_pixels(1, 1, 6, 5)[0] - 0.5]
    out = transformer("crop_size: 2 scale: 3", TEST)(items)
    assert out.shape == (2, 1, 2, 2)
    np.testing.assert_array_equal(out[0], reference(items[0], 2, 1, 1, False, 3.0))
    np.testing.assert_array_equal(out[1], reference(items[1], 2, 2, 1, False, 3.0))
    with pytest.raises(DataError, match="need a crop_size"):
        transformer("")(items)


def test_same_generator_seed_gives_the_same_batch():
    x = uint8_batch(n=8, h=9, w=9)
    t = transformer("crop_size: 5 mirror: true")
    a, b = t(x, np.random.default_rng(7)), t(x, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, t(x, np.random.default_rng(8)))


def test_output_shape_and_crop_larger_than_the_input():
    t = transformer("crop_size: 5")
    assert t.output_shape((3, 8, 6)) == (3, 5, 5)
    assert transformer("").output_shape((1, 28, 28)) == (1, 28, 28)
    with pytest.raises(DataError, match="crop_size 5 is larger than the 4x6 input"):
        t.output_shape((3, 4, 6))


def test_mean_file_and_mean_value_together_are_an_error(tmp_path):
    path = write_mean(tmp_path, np.zeros((1, 2, 2), np.float32))
    with pytest.raises(DataError, match="Cannot specify mean_file and mean_value at the same time"):
        transformer(f'mean_file: "{path}" mean_value: 3')


def test_mean_file_errors_name_the_file(tmp_path):
    with pytest.raises(DataError, match="cannot read the mean file .*nowhere.binaryproto"):
        transformer(f'mean_file: "{tmp_path / "nowhere.binaryproto"}"')
    bad = tmp_path / "bad.binaryproto"
    bad.write_bytes(b"\xff\xff\xff\xff not a proto")
    with pytest.raises(DataError, match="bad.binaryproto is not a BlobProto"):
        transformer(f'mean_file: "{bad}"')
    t = transformer(f'mean_file: "{write_mean(tmp_path, np.zeros((1, 3, 3), np.float32))}"')
    with pytest.raises(DataError, match=r"1x3x3 \(CxHxW\) but the data is 1x4x4"):
        t(uint8_batch(n=1, c=1, h=4, w=4))


def test_force_color_and_force_gray_choose_the_decoding():
    assert transformer("").decode_mode() is None
    assert transformer("force_color: true").decode_mode() == "color"
    assert transformer("force_gray: true").decode_mode() == "gray"
    with pytest.raises(DataError, match="cannot set both force_color and force_gray"):
        transformer("force_color: true force_gray: true").decode_mode()


def test_random_work_without_a_generator_is_refused():
    with pytest.raises(DataError, match="needs a random generator"):
        transformer("mirror: true", TEST)(uint8_batch())
    assert not transformer("crop_size: 2", TEST).needs_random
    assert transformer("crop_size: 2", TRAIN).needs_random
