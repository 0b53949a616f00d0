"""The training package's data layers (engine/export/package/files/caffe_data.py) give the batches the
engine's Data, HDF5Data and ImageData layers give, and shard them: process r of N reads what the
engine's batch i N + r holds."""

from __future__ import annotations

import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from google.protobuf import text_format
from PIL import Image

pytest.importorskip("torch")

from engine.data.lmdb_writer import write_datum_lmdb
from engine.net import Net
from proto import binaryio, caffe_pb2

FILES = Path(__file__).resolve().parents[2] / "engine" / "export" / "package" / "files"


@pytest.fixture(scope="module")
def caffe_data():
    sys.path.insert(0, str(FILES))  # the package's modules import each other and caffe_pb2 by name
    sys.modules.setdefault("caffe_pb2", caffe_pb2)
    import caffe_data

    yield caffe_data
    sys.path.remove(str(FILES))


def engine_batches(layer_text: str, phase: int, count: int) -> list[list[np.ndarray]]:
    net = Net(text_format.Parse(f"layer {{ {layer_text} }}", caffe_pb2.NetParameter()), phase=phase)
    out = []
    for _ in range(count):
        net.forward()
        out.append([np.array(b.data) for b in net.top_vecs[0]])
    net.close()
    return out


def package_batches(caffe_data, layer_text: str, phase: int, indices, rank: int = 0, world: int = 1):
    layer = text_format.Parse(layer_text, caffe_pb2.LayerParameter())
    batches = caffe_data.DataLayerBatches(layer, phase, rank, world, [])
    return [[t.numpy() for t in batches[i]] for i in indices]


def same(a: list[list[np.ndarray]], b: list[list[np.ndarray]]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u.reshape(v.shape), v)


def test_lmdb_with_mean_file_crop_and_scale_and_its_shards(caffe_data, tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (7, 3, 6, 5), dtype=np.uint8)
    write_datum_lmdb(tmp_path / "db", images, np.arange(7) % 3)
    mean = caffe_pb2.BlobProto()
    mean.shape.dim.extend([1, 3, 6, 5])
    mean.data.extend(rng.random(90).astype(np.float32).tolist())
    binaryio.write_blob(str(tmp_path / "mean.binaryproto"), mean)
    text = (
        f'name: "d" type: "Data" top: "data" top: "label" transform_param {{ scale: 0.5 crop_size: 3 '
        f'mean_file: "{tmp_path / "mean.binaryproto"}" }} '
        f'data_param {{ source: "{tmp_path / "db"}" backend: LMDB batch_size: 3 }}'
    )
    want = engine_batches(text, caffe_pb2.TEST, 6)  # 18 records of 7: it wraps around twice
    same(package_batches(caffe_data, text, caffe_pb2.TEST, range(6)), want)
    same(package_batches(caffe_data, text, caffe_pb2.TEST, range(3), rank=1, world=2), want[1::2])


def test_hdf5_list_across_files(caffe_data, tmp_path):
    names = []
    for k, rows in enumerate((3, 2)):
        name = tmp_path / f"part{k}.h5"
        with h5py.File(name, "w") as h5:
            h5["data"] = np.arange(rows * 4, dtype=np.float32).reshape(rows, 2, 2) + 100 * k
            h5["label"] = np.arange(rows, dtype=np.float32) + 10 * k
        names.append(str(name))
    (tmp_path / "list.txt").write_text("\n".join(names) + "\n")
    text = 'name: "h" type: "HDF5Data" top: "data" top: "label" '
    text += f'hdf5_data_param {{ source: "{tmp_path / "list.txt"}" batch_size: 2 }}'
    same(
        package_batches(caffe_data, text, caffe_pb2.TRAIN, range(4)), engine_batches(text, caffe_pb2.TRAIN, 4)
    )


def test_image_list_in_color_and_gray(caffe_data, tmp_path):
    rng = np.random.default_rng(1)
    lines = []
    for k in range(3):
        Image.fromarray(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)).save(tmp_path / f"{k}.png")
        lines.append(f"{k}.png {k}")
    (tmp_path / "list.txt").write_text("\n".join(lines) + "\n")
    for color in ("true", "false"):
        text = (
            f'name: "i" type: "ImageData" top: "data" top: "label" transform_param {{ mean_value: 10 }} '
            f'image_data_param {{ source: "{tmp_path / "list.txt"}" root_folder: "{tmp_path}/" batch_size: 2 '
            f"is_color: {color} }}"
        )
        want = engine_batches(text, caffe_pb2.TEST, 3)
        same(package_batches(caffe_data, text, caffe_pb2.TEST, range(3)), want)
