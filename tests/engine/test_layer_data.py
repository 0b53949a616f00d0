"""Data layer: LMDBs of Datum written here with the lmdb package (uint8, float_data, encoded PNG),
read through make_layer and through a Net: values, labels, cycling, rand_skip ignored, transforms,
determinism across prefetching, seek, and clear errors for bad sources."""

from __future__ import annotations

import gc
import io
import shutil
import threading
import time

import lmdb
import numpy as np
import pytest
from google.protobuf import text_format
from PIL import Image

from engine import rng
from engine.data import paths
from engine.errors import LayerSetupError
from engine.net import Net
from engine.testing import blobs, host, make_layer
from proto import caffe_pb2


def write_lmdb(path, values: list[bytes]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    env = lmdb.open(str(path), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for i, value in enumerate(values):
            txn.put(b"%08d" % i, value)
    env.close()
    return str(path)


def uint8_datums(n=5, shape=(2, 3, 4), seed=0) -> tuple[list[bytes], np.ndarray]:
    images = np.random.default_rng(seed).integers(0, 256, (n, *shape)).astype(np.uint8)
    values = [
        caffe_pb2.Datum(
            channels=shape[0], height=shape[1], width=shape[2], data=images[i].tobytes(), label=10 + i
        ).SerializeToString()
        for i in range(n)
    ]
    return values, images


def data_layer(
    xp, source, batch_size=2, extra="", tops=2, phase=caffe_pb2.TRAIN, backend="LMDB", data_extra=""
):
    top_text = ' top: "label"' if tops == 2 else ""
    return make_layer(
        f'name: "d" type: "Data" top: "data"{top_text} {extra} '
        f'data_param {{ source: "{source}" batch_size: {batch_size} backend: {backend} {data_extra} }}',
        xp,
        phase=phase,
    )


def run(layer, xp, batches: int, tops: int = 2):
    top = blobs(tops, xp)
    layer.setup([], top)
    out = []
    for _ in range(batches):
        layer.forward([], top)
        out.append([host(t.data).copy() for t in top])
    return top, out


def test_uint8_records_in_key_order_cycling_at_the_end(xp, tmp_path):
    values, images = uint8_datums(5)
    layer = data_layer(xp, write_lmdb(tmp_path / "db", values))
    top, out = run(layer, xp, 4)
    assert top[0].shape == (2, 2, 3, 4) and top[1].shape == (2,)
    order = [0, 1, 2, 3, 4, 0, 1, 2]  # 5 records, batches of 2: the third batch wraps
    for b, (data, label) in enumerate(out):
        np.testing.assert_array_equal(data, images[order[2 * b : 2 * b + 2]].astype(np.float64))
        np.testing.assert_array_equal(label, [10 + i for i in order[2 * b : 2 * b + 2]])


def test_float_data_records_and_a_single_top(tmp_path):
    values = np.arange(2 * 6, dtype=np.float32).reshape(2, 1, 2, 3) / 7
    records = [
        caffe_pb2.Datum(
            channels=1, height=2, width=3, float_data=v.ravel().tolist(), label=i
        ).SerializeToString()
        for i, v in enumerate(values)
    ]
    layer = data_layer(np, write_lmdb(tmp_path / "db", records), tops=1, extra="transform_param { scale: 2 }")
    top, out = run(layer, np, 1, tops=1)
    np.testing.assert_array_equal(out[0][0], values.astype(np.float64) * 2)


def png(pixels: np.ndarray, mode: str) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels, mode).save(buffer, "PNG")
    return buffer.getvalue()


def test_encoded_png_records_decode_as_opencv_would(tmp_path):
    rgb = np.random.default_rng(1).integers(0, 256, (3, 4, 3)).astype(np.uint8)
    gray = np.random.default_rng(2).integers(0, 256, (3, 4)).astype(np.uint8)
    records = [
        caffe_pb2.Datum(data=png(rgb, "RGB"), encoded=True, label=1).SerializeToString(),
        caffe_pb2.Datum(data=png(gray, "L"), encoded=True, label=2).SerializeToString(),
    ]
    source = write_lmdb(tmp_path / "db", records)
    # Native decoding keeps each image's channels; colour comes out in BGR order.
    top, out = run(data_layer(np, source, batch_size=1), np, 2)
    np.testing.assert_array_equal(out[0][0][0], rgb[:, :, ::-1].transpose(2, 0, 1))
    np.testing.assert_array_equal(out[1][0][0], gray[None])
    # force_color: the gray image becomes three equal channels.
    top, out = run(data_layer(np, source, extra="transform_param { force_color: true }"), np, 1)
    np.testing.assert_array_equal(out[0][0][1], np.repeat(gray[None], 3, axis=0))
    # force_gray: one channel of ITU-R 601 luma.
    top, out = run(data_layer(np, source, extra="transform_param { force_gray: true }"), np, 1)
    luma = rgb.astype(np.float64) @ [0.299, 0.587, 0.114]
    assert out[0][0].shape == (2, 1, 3, 4)
    assert np.abs(out[0][0][0, 0] - luma).max() <= 1


def test_transform_param_crops_and_scales_batches(xp, tmp_path):
    values, images = uint8_datums(3, shape=(1, 5, 6))
    layer = data_layer(
        xp,
        write_lmdb(tmp_path / "db", values),
        3,
        "transform_param { crop_size: 3 scale: 0.5 }",
        phase=caffe_pb2.TEST,
    )
    top, out = run(layer, xp, 1)
    assert top[0].shape == (3, 1, 3, 3)
    np.testing.assert_array_equal(out[0][0], images[:, :, 1:4, 1:4] * 0.5)


def test_rand_skip_is_ignored_as_in_caffe_1_0(tmp_path):
    """Caffe 1.0's DataLayer reads from the first key whatever rand_skip says (ImageData honours it)."""
    values, images = uint8_datums(10)
    source = write_lmdb(tmp_path / "db", values)
    for seed in range(3):
        rng.set_random_seed(seed)
        _, out = run(data_layer(np, source, batch_size=3, data_extra="rand_skip: 6"), np, 2)
        np.testing.assert_array_equal(np.concatenate([out[0][1], out[1][1]]), 10 + np.arange(6))


def test_native_decoding_keeps_alpha_as_caffes_imdecode_unchanged(tmp_path):
    """Caffe decodes an encoded Datum with DecodeDatumToCVMatNative: cv::imdecode(data, -1), i.e.
    IMREAD_UNCHANGED. An RGBA PNG gives 4 channels (BGRA), libpng's gray+alpha 4 as well (gray
    three times, then alpha), a palette PNG with a transparency chunk 4; force_color drops alpha."""
    rgba = np.random.default_rng(3).integers(0, 256, (3, 4, 4)).astype(np.uint8)
    gray_alpha = np.random.default_rng(4).integers(0, 256, (3, 4, 2)).astype(np.uint8)
    records = [
        caffe_pb2.Datum(data=png(rgba, "RGBA"), encoded=True, label=1).SerializeToString(),
        caffe_pb2.Datum(data=png(gray_alpha, "LA"), encoded=True, label=2).SerializeToString(),
    ]
    source = write_lmdb(tmp_path / "db", records)
    top, out = run(data_layer(np, source, batch_size=1), np, 2)
    assert top[0].shape == (1, 4, 3, 4)  # the shape Caffe's InferBlobShape gives: 4 channels
    np.testing.assert_array_equal(out[0][0][0], rgba[:, :, [2, 1, 0, 3]].transpose(2, 0, 1))  # BGRA
    want = np.concatenate([np.repeat(gray_alpha[None, :, :, 0], 3, axis=0), gray_alpha[None, :, :, 1]])
    np.testing.assert_array_equal(out[1][0][0], want)
    _, out = run(data_layer(np, source, batch_size=1, extra="transform_param { force_color: true }"), np, 1)
    np.testing.assert_array_equal(out[0][0][0], rgba[:, :, 2::-1].transpose(2, 0, 1))  # BGR, no alpha
    palette = Image.fromarray(rgba[:, :, :3]).convert("P")
    buffer = io.BytesIO()
    palette.save(buffer, "PNG", transparency=0)
    record = caffe_pb2.Datum(data=buffer.getvalue(), encoded=True, label=0).SerializeToString()
    top, _ = run(data_layer(np, write_lmdb(tmp_path / "db2", [record]), batch_size=1), np, 1)
    assert top[0].shape == (1, 4, 3, 4)


def test_sixteen_bit_png_is_refused_as_caffes_transformer_refuses_it(tmp_path):
    """IMREAD_UNCHANGED keeps 16 bits; Caffe's DataTransformer then stops ("Image data type must be
    unsigned byte"): a one-line error naming the record. force_gray reads it (the high byte)."""
    deep = (np.arange(12, dtype=np.uint16).reshape(3, 4) * 5001).astype(np.uint16)
    buffer = io.BytesIO()
    Image.fromarray(deep).save(buffer, "PNG")
    record = caffe_pb2.Datum(data=buffer.getvalue(), encoded=True, label=0).SerializeToString()
    source = write_lmdb(tmp_path / "db", [record])
    with pytest.raises(LayerSetupError, match=r"record '00000000': a 16-bit image: .*8-bit images only"):
        data_layer(np, source, batch_size=1).setup([], blobs(2))
    _, out = run(data_layer(np, source, batch_size=1, extra="transform_param { force_gray: true }"), np, 1)
    np.testing.assert_array_equal(out[0][0][0, 0], deep >> 8)


def test_random_transforms_are_reproducible_and_seek_replays_a_batch(tmp_path):
    values, _ = uint8_datums(7, shape=(1, 6, 6))
    source = write_lmdb(tmp_path / "db", values)
    extra = "transform_param { crop_size: 4 mirror: true }"
    rng.set_random_seed(5)
    _, straight = run(data_layer(np, source, 3, extra), np, 6)
    rng.set_random_seed(5)
    _, again = run(data_layer(np, source, 3, extra), np, 6)
    for a, b in zip(straight, again):
        np.testing.assert_array_equal(a[0], b[0])
    assert not all(np.array_equal(straight[0][0], s[0]) for s in straight[1:])
    rng.set_random_seed(5)
    layer = data_layer(np, source, 3, extra)
    top = blobs(2)
    layer.setup([], top)
    layer.forward([], top)
    layer.seek(4)
    layer.forward([], top)
    np.testing.assert_array_equal(top[0].data, straight[4][0])
    np.testing.assert_array_equal(top[1].data, straight[4][1])
    assert layer.batches_served == 5
    layer.close()


def net_param(source: str, extra: str = "") -> caffe_pb2.NetParameter:
    return text_format.Parse(
        f'layer {{ name: "d" type: "Data" top: "data" top: "label" {extra} '
        f'data_param {{ source: "{source}" batch_size: 2 backend: LMDB }} }}',
        caffe_pb2.NetParameter(),
    )


def test_in_a_net_with_a_relative_source_found_under_the_data_root(tmp_path, monkeypatch):
    values, images = uint8_datums(4)
    write_lmdb(tmp_path / "root" / "mnist_train_lmdb", values)
    monkeypatch.chdir(tmp_path)
    root = paths.DataPaths(root=tmp_path / "root")
    # Caffe's relative path: not under the working directory, found by its last component.
    net = Net(
        net_param("examples/mnist/mnist_train_lmdb"), phase=caffe_pb2.TRAIN, dtype=np.float32, data_paths=root
    )
    net.forward()
    net.forward()
    np.testing.assert_array_equal(net.blob_by_name("data").data, images[2:4])
    np.testing.assert_array_equal(net.blob_by_name("label").data, [12, 13])
    assert not net.layer_need_backward[0]


def test_missing_source_names_the_path(tmp_path):
    with pytest.raises(LayerSetupError, match=r"'d' \(Data\): cannot open the LMDB .*no_such_db"):
        data_layer(np, tmp_path / "no_such_db").setup([], blobs(2))


def test_leveldb_is_not_supported_and_an_lmdb_gets_a_hint(tmp_path):
    values, _ = uint8_datums(2)
    source = write_lmdb(tmp_path / "db", values)
    with pytest.raises(LayerSetupError, match=r"LEVELDB backend is not supported.*set 'backend: LMDB'"):
        data_layer(np, source, backend="LEVELDB").setup([], blobs(2))


def test_corrupt_and_inconsistent_records_name_the_record(tmp_path):
    good, _ = uint8_datums(1)
    source = write_lmdb(tmp_path / "db", [good[0], b"\xff\xff\xff garbage"])
    layer = data_layer(np, source)
    top = blobs(2)
    layer.setup([], top)
    with pytest.raises(LayerSetupError, match=r"db record '00000001' is not a Datum"):
        layer.forward([], top)
    with pytest.raises(LayerSetupError, match="is not a Datum"):  # the error sticks
        layer.forward([], top)
    short = caffe_pb2.Datum(channels=1, height=2, width=2, data=b"abc").SerializeToString()
    with pytest.raises(
        LayerSetupError, match=r"db2 record '00000000': 3 bytes of data for a \(1, 2, 2\) Datum"
    ):
        data_layer(np, write_lmdb(tmp_path / "db2", [short])).setup([], blobs(2))


def test_empty_database_and_bad_batch_size(tmp_path):
    source = write_lmdb(tmp_path / "empty", [])
    with pytest.raises(LayerSetupError, match="empty holds no records"):
        data_layer(np, source).setup([], blobs(2))
    values, _ = uint8_datums(2)
    with pytest.raises(LayerSetupError, match="batch_size must be positive"):
        data_layer(np, write_lmdb(tmp_path / "db", values), batch_size=0).setup([], blobs(2))


def test_blob_counts_and_no_backward(tmp_path):
    values, _ = uint8_datums(2)
    source = write_lmdb(tmp_path / "db", values)
    with pytest.raises(LayerSetupError, match="at most 2 top"):
        data_layer(np, source).setup([], blobs(3))
    layer = data_layer(np, source)
    top = blobs(2)
    layer.setup([], top)
    with pytest.raises(NotImplementedError):
        layer.backward(top, [True], [])


def test_dropping_the_layer_stops_its_thread_and_releases_the_database(tmp_path):
    values, _ = uint8_datums(4)
    source = write_lmdb(tmp_path / "db", values)
    layer = data_layer(np, source)
    top = blobs(2)
    layer.setup([], top)
    layer.forward([], top)
    assert any(t.name == "data-prefetch" for t in threading.enumerate())
    del layer
    gc.collect()
    deadline = time.monotonic() + 5
    while any(t.name == "data-prefetch" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.name == "data-prefetch" for t in threading.enumerate())
    # lmdb opens a path once per process: the database must have been let go to be rewritten and reread.
    shutil.rmtree(tmp_path / "db")
    new_values, new_images = uint8_datums(4, seed=9)
    _, out = run(data_layer(np, write_lmdb(tmp_path / "db", new_values)), np, 1)
    np.testing.assert_array_equal(out[0][0], new_images[:2])


def test_data_root_from_the_environment(tmp_path, monkeypatch):
    (tmp_path / "root" / "sub").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(paths.ENV_VAR, str(tmp_path / "root"))
    assert paths.resolve("sub") == tmp_path / "root" / "sub"
    assert paths.resolve("elsewhere/sub") == tmp_path / "root" / "sub"
    assert paths.resolve("missing") == paths.Path("missing")  # as given, so the error names it
    (tmp_path / "sub").mkdir()
    assert paths.resolve("sub") == paths.Path("sub")  # the working directory comes first, as in Caffe
