"""#24: the Dataset view's reader for a data layer's source (engine/data/source_browse.py): an
ImageData image list and an HDF5Data file list, besides an LMDB, each read as the layer reads it."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from PIL import Image

from engine.data.errors import DataError
from engine.data.paths import DataPaths
from engine.data.source_browse import browse_hdf5, browse_image_list, browse_layer
from proto import textio


def image_list(folder):
    rng = np.random.default_rng(0)
    pictures = [rng.integers(0, 256, (4 + i, 6, 3), dtype=np.uint8) for i in range(3)]
    for i, rgb in enumerate(pictures):
        Image.fromarray(rgb).save(folder / f"im {i}.png")  # a space in the name, as Caffe allows
    (folder / "list.txt").write_text("im 0.png 2\nim 1.png 0\nmissing.png 2\nim 2.png 2\n")
    return pictures


def test_an_image_list_as_imagedata_reads_it(tmp_path):
    pictures = image_list(tmp_path)
    seen = browse_image_list(tmp_path / "list.txt", f"{tmp_path}/")
    assert (seen.kind, seen.count, seen.counts(), seen.shape, seen.note) == (
        "image list",
        4,
        {0: 1, 2: 3},
        (3, 4, 6),
        "",
    )
    assert seen.indices_of(2).tolist() == [0, 2, 3]
    (first, label), (missing, _), (last, _) = seen.read([0, 2, 3])
    np.testing.assert_array_equal(first, pictures[0][:, :, ::-1].transpose(2, 0, 1))  # BGR, as ImageData
    assert label == 2 and missing.shape == (1, 8, 8) and last.shape == (3, 6, 6)
    gray = browse_image_list(tmp_path / "list.txt", f"{tmp_path}/", color=False, size=(5, 7))
    assert gray.shape == (1, 5, 7) and gray.read([3])[0][0].shape == (1, 5, 7)


def test_an_hdf5_file_list_with_labels_and_rows_as_images(tmp_path):
    data = np.random.default_rng(1).random((5, 1, 4, 3)).astype(np.float32)
    for name, rows in (("a.h5", slice(0, 3)), ("b.h5", slice(3, 5))):
        with h5py.File(tmp_path / name, "w") as f:
            f["data"] = data[rows]
            f["label"] = np.array([0, 1, 1, 3, 1], np.float32)[rows]
    (tmp_path / "files.txt").write_text("a.h5\nb.h5\n")
    seen = browse_hdf5(tmp_path / "files.txt", ["data", "label"])
    assert (seen.kind, seen.count, seen.counts(), seen.shape) == ("HDF5", 5, {0: 1, 1: 3, 3: 1}, (1, 4, 3))
    ((row, label),) = seen.read([3])  # the second file's first row
    np.testing.assert_array_equal(row, data[3])
    assert label == 3
    vectors = tmp_path / "v.h5"
    with h5py.File(vectors, "w") as f:
        f["x"] = np.ones((2, 7), np.float32)
        f["y"] = np.ones((2, 3), np.float32)  # not one label per row
    (tmp_path / "v.txt").write_text("v.h5\n")
    seen = browse_hdf5(tmp_path / "v.txt", ["x", "y"])
    assert seen.shape == (1, 1, 7) and seen.counts() == {0: 2} and "not class labels" in seen.note


def test_a_layer_finds_its_relative_source_beside_the_net(tmp_path):
    image_list(tmp_path)
    net = textio.parse_net(
        'layer { name: "img" type: "ImageData" top: "data" top: "label" '
        f'image_data_param {{ source: "list.txt" root_folder: "{tmp_path}/" new_height: 3 new_width: 3 }} }}'
        'layer { name: "relu" type: "ReLU" bottom: "data" top: "data" }'
        'layer { name: "d" type: "Data" top: "x" data_param { source: "nowhere_lmdb" backend: LMDB } }'
    )
    seen = browse_layer(net.layer[0], DataPaths(search_from=(tmp_path,)))
    assert seen.path == tmp_path / "list.txt" and seen.shape == (3, 3, 3)
    with pytest.raises(DataError, match=r"layer 'relu' \(ReLU\) has no source to view"):
        browse_layer(net.layer[1], DataPaths(search_from=(tmp_path,)))
    with pytest.raises(DataError, match=r"layer 'd' \(Data\): its source nowhere_lmdb is not here"):
        browse_layer(net.layer[2], DataPaths(search_from=(tmp_path,)))
    (tmp_path / "list.txt").write_text("")
    with pytest.raises(DataError, match=r"^layer 'img': the image list .* is empty"):
        browse_layer(net.layer[0], DataPaths(search_from=(tmp_path,)))
