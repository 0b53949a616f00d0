"""HDF5Data: .h5 files written here with h5py; rows across files in list order, cycling, shuffle
(file order and rows per file, files never mixed), dtype conversion, and errors naming the file."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from engine.errors import LayerSetupError
from engine.testing import blobs, host, make_layer


def write_h5(path, rows: np.ndarray, label_dtype=np.float32, **extra) -> None:
    """data (n, 2, 3) whose every value is its row id, label (n, 1) = row id * 10."""
    with h5py.File(path, "w") as f:
        f["data"] = np.repeat(rows.astype(np.float64), 6).reshape(len(rows), 2, 3)
        f["label"] = (rows[:, None] * 10).astype(label_dtype)
        for name, value in extra.items():
            f[name] = value


def setup_files(tmp_path, sizes=(4, 3)) -> str:
    """Files of consecutive row ids, listed (relative to the list's folder) in a list file."""
    names, start = [], 0
    for i, n in enumerate(sizes):
        write_h5(
            tmp_path / f"part{i}.h5", np.arange(start, start + n), label_dtype=np.int32 if i else np.float32
        )
        names.append(f"part{i}.h5")
        start += n
    (tmp_path / "list.txt").write_text("\n".join(names) + "\n")
    return str(tmp_path / "list.txt")


def hdf5_layer(xp, source, batch_size=3, params="", tops=("data", "label"), extra=""):
    top_text = " ".join(f'top: "{t}"' for t in tops)
    return make_layer(
        f'name: "h5" type: "HDF5Data" {top_text} {extra} '
        f'hdf5_data_param {{ source: "{source}" batch_size: {batch_size} {params} }}',
        xp,
    )


def forward(layer, xp, batches: int, tops: int = 2):
    top = blobs(tops, xp)
    layer.setup([], top)
    out = []
    for _ in range(batches):
        layer.forward([], top)
        out.append([host(t.data).copy() for t in top])
    layer.close()
    return top, out


def test_rows_run_across_files_in_list_order_and_cycle(xp, tmp_path):
    top, out = forward(hdf5_layer(xp, setup_files(tmp_path)), xp, 4)
    assert top[0].shape == (3, 2, 3) and top[1].shape == (3, 1)
    rows = np.arange(12) % 7  # 4 + 3 rows, batches of 3
    for b, (data, label) in enumerate(out):
        want = rows[3 * b : 3 * b + 3]
        np.testing.assert_array_equal(data, np.repeat(want, 6).reshape(3, 2, 3))
        np.testing.assert_array_equal(label[:, 0], want * 10)  # int32 in the second file, float here


def test_one_top_reads_one_dataset(tmp_path):
    top, out = forward(hdf5_layer(np, setup_files(tmp_path), 2, tops=("label",)), np, 1, tops=1)
    np.testing.assert_array_equal(out[0][0], [[0], [10]])


def test_shuffle_permutes_files_and_rows_without_mixing_files(tmp_path):
    source = setup_files(tmp_path, sizes=(5, 4, 3))
    _, out = forward(hdf5_layer(np, source, 4, "shuffle: true", tops=("label",)), np, 12, tops=1)
    ids = (np.concatenate([o[0][:, 0] for o in out]) / 10).astype(int).reshape(4, 12)
    files = [set(range(5)), set(range(5, 9)), set(range(9, 12))]
    orders = set()
    for one_pass in ids:
        assert sorted(one_pass) == list(range(12))
        # The pass is three runs, each all the rows of one file.
        runs, at = [], 0
        while at < 12:
            owner = next(f for f in files if one_pass[at] in f)
            assert set(one_pass[at : at + len(owner)]) == owner
            runs.append(min(owner))
            at += len(owner)
        orders.add(tuple(runs))
    assert not all((ids == np.arange(12)).all(axis=1))
    assert len({tuple(p) for p in ids}) > 1
    assert len(orders) > 1  # the file order is redrawn too


def test_seek_replays_the_shuffled_stream(tmp_path):
    source = setup_files(tmp_path, sizes=(3, 4))
    layer = hdf5_layer(np, source, 3, "shuffle: true")
    _, straight = forward(layer, np, 6)
    layer.seek(4)
    top = blobs(2)
    layer.forward([], top)
    np.testing.assert_array_equal(top[1].data, straight[4][1])
    layer.close()


def test_transform_param_is_refused(tmp_path):
    with pytest.raises(LayerSetupError, match=r"'h5' \(HDF5Data\): HDF5Data does not transform data"):
        hdf5_layer(np, setup_files(tmp_path), extra="transform_param { scale: 2 }").setup([], blobs(2))


def test_missing_list_file_or_dataset_names_the_file(tmp_path):
    with pytest.raises(LayerSetupError, match="Failed to open source file: .*nolist.txt"):
        hdf5_layer(np, tmp_path / "nolist.txt").setup([], blobs(2))
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(LayerSetupError, match="Must have at least 1 HDF5 filename listed in .*empty.txt"):
        hdf5_layer(np, tmp_path / "empty.txt").setup([], blobs(2))
    source = setup_files(tmp_path)
    with pytest.raises(LayerSetupError, match="Failed to find HDF5 dataset weights in .*part0.h5"):
        hdf5_layer(np, source, tops=("data", "weights")).setup([], blobs(2))
    (tmp_path / "gone.txt").write_text(f"{tmp_path}/part0.h5 {tmp_path}/gone.h5\n")
    with pytest.raises(LayerSetupError, match="Failed opening HDF5 file: .*gone.h5"):
        hdf5_layer(np, tmp_path / "gone.txt").setup([], blobs(2))
    (tmp_path / "notes.h5").write_text("not hdf5")
    (tmp_path / "notes.txt").write_text("notes.h5\n")
    with pytest.raises(LayerSetupError, match="Failed opening HDF5 file: .*notes.h5"):
        hdf5_layer(np, tmp_path / "notes.txt").setup([], blobs(2))


def test_inconsistent_datasets_are_errors(tmp_path):
    with h5py.File(tmp_path / "uneven.h5", "w") as f:
        f["data"] = np.zeros((4, 2))
        f["label"] = np.zeros((3, 1))
    (tmp_path / "uneven.txt").write_text("uneven.h5")
    with pytest.raises(LayerSetupError, match="uneven.h5: the datasets .* have different numbers of rows"):
        hdf5_layer(np, tmp_path / "uneven.txt").setup([], blobs(2))
    write_h5(tmp_path / "a.h5", np.arange(2))
    with h5py.File(tmp_path / "b.h5", "w") as f:
        f["data"] = np.zeros((2, 3, 3))
        f["label"] = np.zeros((2, 1))
    (tmp_path / "ab.txt").write_text("a.h5 b.h5")
    layer = hdf5_layer(np, tmp_path / "ab.txt", 2)
    top = blobs(2)
    layer.setup([], top)
    layer.forward([], top)
    with pytest.raises(
        LayerSetupError, match=r"b.h5: rows of shape .*\(3, 3\).*the first file's are .*\(2, 3\)"
    ):
        layer.forward([], top)
    layer.close()


def test_label_shape_follows_the_dataset_n_or_n_by_1(tmp_path):
    with h5py.File(tmp_path / "flat.h5", "w") as f:
        f["data"] = np.arange(8, dtype=np.float32).reshape(4, 2)
        f["label"] = np.arange(4, dtype=np.float32)  # (N,): the top is (batch,), as Caffe
    (tmp_path / "list.txt").write_text(f"{tmp_path / 'flat.h5'}\n")
    top, out = forward(hdf5_layer(np, tmp_path / "list.txt", 2), np, 2)
    assert top[0].shape == (2, 2) and top[1].shape == (2,)
    np.testing.assert_array_equal(out[1][1], [2, 3])
