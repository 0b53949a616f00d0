"""WindowData: the R-CNN window file, fg/bg split and sampling, warp and square crops with context
padding worked out by hand, mirror, mean file / mean values, scale, and errors naming the file."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from engine import rng
from engine.errors import LayerSetupError
from engine.testing import blobs, host, make_layer
from proto import binaryio, caffe_pb2

# The image at (y, x) holds BGR = (x, y, 100): every pixel says where it came from.
H, W = 10, 12


def coordinate_image(path) -> np.ndarray:
    ys, xs = np.mgrid[0:H, 0:W]
    bgr = np.stack([xs, ys, np.full_like(xs, 100)]).astype(np.uint8)
    Image.fromarray(bgr[::-1].transpose(1, 2, 0), "RGB").save(path)
    return bgr


def window_file(tmp_path, windows, images=1, channels=3) -> str:
    lines = []
    for index in range(images):
        coordinate_image(tmp_path / f"im{index}.png")
        lines += [f"# {index}", f"im{index}.png", f"{channels} {H} {W}", str(len(windows))]
        lines += [" ".join(map(str, w)) for w in windows]
    (tmp_path / "windows.txt").write_text("\n".join(lines) + "\n")
    return str(tmp_path / "windows.txt")


def window_layer(tmp_path, source, batch=2, crop=4, extra="", transform="", dtype=np.float32):
    return make_layer(
        f'name: "w" type: "WindowData" top: "data" top: "label" '
        f"transform_param {{ crop_size: {crop} {transform} }} "
        f'window_data_param {{ source: "{source}" batch_size: {batch} root_folder: "{tmp_path}/" {extra} }}',
        np,
        dtype=dtype,
    )


def forward(layer, batches=1):
    top = blobs(2, dtype=layer.dtype)
    layer.setup([], top)
    shapes = (top[0].shape, top[1].shape)
    out = []
    for _ in range(batches):
        layer.forward([], top)
        out.append((host(top[0].data).copy(), host(top[1].data).copy()))
    layer.close()
    return shapes, out


FG = (3, 0.9, 2, 3, 5, 6)  # label 3, a 4x4 window with corners (2, 3) and (5, 6)
BG = (7, 0.1, 6, 1, 9, 4)  # overlap below bg_threshold: label forced to 0


def test_window_file_split_and_fg_fraction(tmp_path):
    source = window_file(tmp_path, [FG, BG, (5, 0.4, 0, 0, 3, 3)])  # the 0.4 one is neither
    (shape, label_shape), out = forward(
        window_layer(tmp_path, source, batch=4, extra="fg_fraction: 0.5 bg_threshold: 0.3")
    )
    assert shape == (4, 3, 4, 4) and label_shape == (4,)
    data, labels = out[0]
    np.testing.assert_array_equal(labels, [0, 0, 3, 3])  # background first, then foreground
    bgr = coordinate_image(tmp_path / "ref.png")
    # A 4x4 window and crop_size 4: the warp is the identity, so the pixels are the window's.
    np.testing.assert_array_equal(data[2], bgr[:, 3:7, 2:6])
    np.testing.assert_array_equal(data[0], bgr[:, 1:5, 6:10])


def test_context_pad_grows_the_window_and_leaves_the_outside_zero(tmp_path):
    # Window (0,0)-(3,3), crop 8, context_pad 2: grown by 8/4 about its centre (2, 2) to x,y in
    # [-2, 6], 9 pixels; the 7 inside are warped to round(7 * 8/9) = 6 and placed at round(2 * 8/9) = 2.
    source = window_file(tmp_path, [(1, 1.0, 0, 0, 3, 3), BG])
    layer = window_layer(tmp_path, source, batch=1, crop=8, extra="fg_fraction: 1 context_pad: 2 scale: 0.5")
    _, out = forward(layer)
    data = out[0][0][0]
    channel = data[2]  # the constant channel: 100 * scale wherever the window landed
    expected = np.zeros((8, 8))
    expected[2:8, 2:8] = 50
    np.testing.assert_array_equal(channel, expected)


def test_mirror_flips_the_window_and_its_padding(tmp_path):
    rng.set_random_seed(0)  # eight draws: both outcomes appear for this seed
    source = window_file(tmp_path, [(1, 1.0, 0, 0, 3, 3), BG])
    layer = window_layer(
        tmp_path, source, batch=8, crop=8, extra="fg_fraction: 1 context_pad: 2", transform="mirror: true"
    )
    _, out = forward(layer)
    placed = {tuple(np.flatnonzero(item[2].any(axis=0))) for item in out[0][0]}
    # Unmirrored: columns 2..7; mirrored: the padding moves to the right (pad_x2 = 0): columns 0..5.
    assert placed == {tuple(range(2, 8)), tuple(range(0, 6))}
    for item in out[0][0]:
        blue = item[0]  # the x coordinate channel: increasing left to right unless mirrored
        row = blue[4][item[2][4] > 0]
        assert np.all(np.diff(row) >= 0) or np.all(np.diff(row) <= 0)


def test_square_mode_uses_the_longer_side(tmp_path):
    # A 2-wide, 4-tall window at x 4..5, y 2..5; square with no pad: 4x4 around its centre (5, 4):
    # x from round(5 - 2) = 3 to round(5 + 2) = 7, y from 2 to 6 (5 pixels each), warped to 5x5... all
    # inside the image, so with crop 5 the warp is the identity.
    source = window_file(tmp_path, [(1, 1.0, 4, 2, 5, 5), BG])
    layer = window_layer(tmp_path, source, batch=1, crop=5, extra='fg_fraction: 1 crop_mode: "square"')
    _, out = forward(layer)
    bgr = coordinate_image(tmp_path / "ref.png")
    np.testing.assert_array_equal(out[0][0][0], bgr[:, 2:7, 3:8])


def test_mean_values_and_mean_file(tmp_path):
    source = window_file(tmp_path, [FG, BG])
    layer = window_layer(
        tmp_path,
        source,
        batch=1,
        extra="fg_fraction: 1",
        transform="mean_value: 1 mean_value: 2 mean_value: 3",
    )
    _, out = forward(layer)
    bgr = coordinate_image(tmp_path / "ref.png")
    np.testing.assert_array_equal(out[0][0][0], bgr[:, 3:7, 2:6] - np.array([1, 2, 3])[:, None, None])
    # A 3x6x6 mean: centred by (6 - 4) // 2 = 1 on both axes.
    mean = np.arange(3 * 6 * 6, dtype=np.float32).reshape(1, 3, 6, 6)
    proto = caffe_pb2.BlobProto(num=1, channels=3, height=6, width=6, data=mean.ravel().tolist())
    binaryio.write_blob(tmp_path / "mean.binaryproto", proto)
    layer = window_layer(
        tmp_path,
        source,
        batch=1,
        extra="fg_fraction: 1",
        transform=f'mean_file: "{tmp_path}/mean.binaryproto"',
    )
    _, out = forward(layer)
    np.testing.assert_array_equal(out[0][0][0], bgr[:, 3:7, 2:6] - mean[0, :, 1:5, 1:5])


def test_batches_are_reproducible_per_seed(tmp_path):
    source = window_file(tmp_path, [FG, BG, (2, 0.8, 0, 0, 3, 3)], images=2)
    rng.set_random_seed(5)
    _, first = forward(window_layer(tmp_path, source, batch=6, extra="fg_fraction: 0.5"), 2)
    rng.set_random_seed(5)
    _, again = forward(window_layer(tmp_path, source, batch=6, extra="fg_fraction: 0.5"), 2)
    for (a, la), (b, lb) in zip(first, again):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)
    assert set(np.concatenate([first[0][1][3:], first[1][1][3:]])) <= {2.0, 3.0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Window file is empty"),
        ("0\nim0.png\n3 10 12\n0\n", "expected '#'"),
        ("# 0\nim0.png\n3 10\n", "ends where the image width was expected"),
        ("# 0\nim0.png\n3 10 12\n1\n3 x 0 0 1 1\n", r"windows.txt:5: expected a window's overlap"),
        ("# 0\nim0.png\n3 10 12\n1\n0 0.9 0 0 1 1\n", "foreground window .* needs a positive label"),
        ("# 5\nim0.png\n3 10 12\n2\n1 0.9 0 0 1 1\n0 0.1 0 0 1 1\n", "image index 5, but the file lists 1"),
        ("# 0\nim0.png\n3 10 12\n1\n1 0.9 0 0 1 1\n", "needs foreground and background windows"),
        ("# 0\nim0.png\n1 10 12\n2\n1 0.9 0 0 1 1\n0 0.1 0 0 1 1\n", "3 channels"),
    ],
)
def test_bad_window_files_are_clear_errors(tmp_path, text, message):
    (tmp_path / "windows.txt").write_text(text)
    with pytest.raises(LayerSetupError, match=message):
        window_layer(tmp_path, tmp_path / "windows.txt").setup([], blobs(2))


def test_missing_file_crop_and_window_outside_the_image(tmp_path):
    with pytest.raises(LayerSetupError, match="Failed to open window file"):
        window_layer(tmp_path, tmp_path / "none.txt").setup([], blobs(2))
    source = window_file(tmp_path, [FG, BG])
    with pytest.raises(LayerSetupError, match="crop_size must be positive"):
        window_layer(tmp_path, source, crop=0).setup([], blobs(2))
    source = window_file(tmp_path, [(1, 0.9, 8, 8, 20, 20), BG])
    with pytest.raises(LayerSetupError, match="does not fit inside the image"):
        forward(window_layer(tmp_path, source, batch=1, extra="fg_fraction: 1"))
    (tmp_path / "im0.png").unlink()
    with pytest.raises(LayerSetupError, match="im0.png"):
        forward(window_layer(tmp_path, source, batch=1, extra="fg_fraction: 1"))
