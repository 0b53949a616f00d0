"""ImageData: PNG files and a list file written here; order, labels, colour/gray decoding,
OpenCV-style resizing, per-epoch shuffling, rand_skip, root_folder, and errors naming the file."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from engine import rng
from engine.data.images import resize_bilinear
from engine.errors import LayerSetupError
from engine.testing import blobs, host, make_layer


def write_images(folder, n=5, size=(4, 6), seed=0) -> list[np.ndarray]:
    """n RGB images (H, W, 3) saved as img<i>.png; returns their pixels."""
    folder.mkdir(parents=True, exist_ok=True)
    pixels = [np.random.default_rng(seed + i).integers(0, 256, (*size, 3)).astype(np.uint8) for i in range(n)]
    for i, p in enumerate(pixels):
        Image.fromarray(p, "RGB").save(folder / f"img {i}.png")
    return pixels


def write_list(path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def image_layer(xp, source, batch_size=2, params="", extra=""):
    return make_layer(
        f'name: "img" type: "ImageData" top: "data" top: "label" {extra} '
        f'image_data_param {{ source: "{source}" batch_size: {batch_size} {params} }}',
        xp,
    )


def forward(layer, xp, batches: int):
    top = blobs(2, xp)
    layer.setup([], top)
    out = []
    for _ in range(batches):
        layer.forward([], top)
        out.append((host(top[0].data).copy(), host(top[1].data).copy()))
    layer.close()
    return top, out


def bgr(p: np.ndarray) -> np.ndarray:
    return p[:, :, ::-1].transpose(2, 0, 1)


def test_images_in_list_order_with_labels_cycling(xp, tmp_path):
    pixels = write_images(tmp_path / "images", 3)
    # Paths may hold spaces: the label follows the last one.
    source = write_list(tmp_path / "list.txt", [f"img {i}.png {7 * i}" for i in range(3)])
    layer = image_layer(xp, source, 2, f'root_folder: "{tmp_path / "images"}/"')
    top, out = forward(layer, xp, 2)
    assert top[0].shape == (2, 3, 4, 6) and top[1].shape == (2,)
    order = [0, 1, 2, 0]
    for b, (data, label) in enumerate(out):
        for k in range(2):
            np.testing.assert_array_equal(data[k], bgr(pixels[order[2 * b + k]]))
        np.testing.assert_array_equal(label, [7 * order[2 * b], 7 * order[2 * b + 1]])


def test_gray_decoding_and_resize(tmp_path):
    pixels = write_images(tmp_path, 2)
    source = write_list(tmp_path / "list.txt", [f"{tmp_path}/img {i}.png {i}" for i in range(2)])
    top, out = forward(image_layer(np, source, 2, "is_color: false new_height: 3 new_width: 9"), np, 1)
    assert top[0].shape == (2, 1, 3, 9)
    r, g, b = pixels[1].astype(np.int64).transpose(2, 0, 1)
    gray = ((9797 * r + 19234 * g + 3737 * b) >> 15).astype(np.uint8)  # libpng's rgb_to_gray, as OpenCV asks
    np.testing.assert_array_equal(out[0][0][1], resize_bilinear(gray[None], 3, 9))


def test_resize_matches_opencv_inter_linear_reference():
    """OpenCV: src = (dst + 0.5) * scale - 0.5, clamped to the edges, weights on the 2 neighbours."""
    image = np.random.default_rng(3).integers(0, 256, (2, 5, 7)).astype(np.uint8)
    for height, width in [(3, 4), (9, 11), (5, 7), (1, 2)]:
        want = np.zeros((2, height, width))
        for y in range(height):
            for x in range(width):
                sy, sx = (y + 0.5) * 5 / height - 0.5, (x + 0.5) * 7 / width - 0.5
                y0, x0 = int(np.floor(sy)), int(np.floor(sx))
                fy, fx = sy - y0, sx - x0
                if y0 < 0:
                    y0, fy = 0, 0.0
                if y0 >= 4:
                    y0, fy = 4, 0.0
                if x0 < 0:
                    x0, fx = 0, 0.0
                if x0 >= 6:
                    x0, fx = 6, 0.0
                y1, x1 = min(y0 + 1, 4), min(x0 + 1, 6)
                top = image[:, y0, x0] * (1 - fx) + image[:, y0, x1] * fx
                bottom = image[:, y1, x0] * (1 - fx) + image[:, y1, x1] * fx
                want[:, y, x] = top * (1 - fy) + bottom * fy
        got = resize_bilinear(image, height, width).astype(np.float64)
        # OpenCV rounds its weights to 1/2048 and drops low bits in 16-bit multiplies: within one
        # grey level of the exact value (the exact pixels are pinned by test_opencv_goldens).
        assert np.abs(got - want).max() < 1


def test_shuffle_draws_a_new_order_every_epoch(tmp_path):
    write_images(tmp_path, 6, size=(2, 2))
    source = write_list(tmp_path / "list.txt", [f"{tmp_path}/img {i}.png {i}" for i in range(6)])
    top, out = forward(image_layer(np, source, 3, "shuffle: true"), np, 8)
    labels = np.concatenate([label for _, label in out]).astype(int).reshape(4, 6)
    for epoch in labels:
        assert sorted(epoch) == list(range(6))
    assert len({tuple(e) for e in labels}) > 1
    assert any(list(e) != list(range(6)) for e in labels)
    rng.set_random_seed(1701)
    _, again = forward(image_layer(np, source, 3, "shuffle: true"), np, 8)
    np.testing.assert_array_equal(np.concatenate([label for _, label in again]).reshape(4, 6), labels)


def test_rand_skip_and_a_transform(tmp_path):
    pixels = write_images(tmp_path, 4, size=(5, 5))
    source = write_list(tmp_path / "list.txt", [f"{tmp_path}/img {i}.png {i}" for i in range(4)])
    firsts = set()
    for seed in range(8):
        rng.set_random_seed(seed)
        layer = image_layer(
            np, source, 1, "rand_skip: 3", "transform_param { crop_size: 3 scale: 2 } phase: TEST"
        )
        _, out = forward(layer, np, 2)
        first = int(out[0][1][0])
        assert first < 3 and int(out[1][1][0]) == first + 1
        np.testing.assert_array_equal(out[0][0][0], bgr(pixels[first])[:, 1:4, 1:4] * 2.0)
        firsts.add(first)
    assert len(firsts) > 1


def test_missing_files_and_bad_lines_name_the_file(tmp_path):
    with pytest.raises(
        LayerSetupError, match=r"'img' \(ImageData\): cannot open the image list .*nolist.txt"
    ):
        image_layer(np, tmp_path / "nolist.txt").setup([], blobs(2))
    bad = write_list(tmp_path / "bad.txt", ["a.png 1", "b.png"])
    with pytest.raises(LayerSetupError, match=r"bad.txt:2: expected 'path label', got 'b.png'"):
        image_layer(np, bad).setup([], blobs(2))
    empty = write_list(tmp_path / "empty.txt", [])
    with pytest.raises(LayerSetupError, match="empty.txt is empty"):
        image_layer(np, empty).setup([], blobs(2))
    missing = write_list(tmp_path / "missing.txt", [f"{tmp_path}/gone.png 0"])
    with pytest.raises(LayerSetupError, match="Could not load .*gone.png"):
        image_layer(np, missing).setup([], blobs(2))
    (tmp_path / "junk.png").write_bytes(b"not an image")
    junk = write_list(tmp_path / "junk.txt", [f"{tmp_path}/junk.png 0"])
    with pytest.raises(LayerSetupError, match="junk.png: cannot decode the image"):
        image_layer(np, junk).setup([], blobs(2))


def test_parameter_checks(tmp_path):
    write_images(tmp_path, 1)
    source = write_list(tmp_path / "list.txt", [f"{tmp_path}/img 0.png 0"])
    with pytest.raises(LayerSetupError, match="new_height and new_width to be set at the same time"):
        image_layer(np, source, 1, "new_height: 4").setup([], blobs(2))
    with pytest.raises(LayerSetupError, match="Not enough points to skip"):
        rng.set_random_seed(3)
        for _ in range(20):  # a draw of 1 or more out of rand_skip 5 with a single line
            image_layer(np, source, 1, "rand_skip: 5").setup([], blobs(2))
    with pytest.raises(LayerSetupError, match="exactly 2 top"):
        image_layer(np, source, 1).setup([], blobs(1))
