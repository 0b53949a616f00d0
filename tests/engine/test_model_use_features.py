"""`main.py extract_features` (engine/model_use/features.py): the Datums read back from the LMDB,
and the .npy array, equal the blobs' values batch after batch, with Caffe's keys and shapes."""

from __future__ import annotations

from pathlib import Path

import lmdb
import numpy as np
import pytest

import main
from engine.data.lmdb_writer import write_datum_lmdb
from engine.net import Net
from proto import caffe_pb2, textio
from proto.binaryio import read_caffemodel, write_caffemodel

NET = """
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }
  transform_param { scale: 0.0625 } data_param { source: "items_lmdb" batch_size: 4 backend: LMDB } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 5 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""


@pytest.fixture
def model(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.chdir(tmp_path)  # the Data layer's relative source, as Caffe opens it
    rng = np.random.default_rng(2)
    items = rng.integers(0, 256, (10, 1, 4, 4), dtype=np.uint8)
    write_datum_lmdb(tmp_path / "items_lmdb", items, np.arange(10) % 5)
    net_path = tmp_path / "net.prototxt"
    net_path.write_text(NET)
    param = textio.read_net(net_path)
    param.state.phase = caffe_pb2.TEST
    net = Net(param)
    write_caffemodel(tmp_path / "w.caffemodel", net.to_proto())
    net.close()
    return net_path, tmp_path / "w.caffemodel"


def blob_values(net_path: Path, weights: Path, names: list[str], batches: int) -> dict[str, np.ndarray]:
    """The blobs as a net of the same file and weights gives them, batch after batch."""
    param = textio.read_net(net_path)
    param.state.phase = caffe_pb2.TEST
    net = Net(param)
    net.copy_trained_layers_from(read_caffemodel(weights))
    out: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for _ in range(batches):
        net.forward_from_to()
        for n in names:
            out[n].append(np.array(net.blob_by_name(n).data))
    net.close()
    return {n: np.concatenate(v) for n, v in out.items()}


def read_lmdb(path: Path) -> list[tuple[bytes, caffe_pb2.Datum]]:
    env = lmdb.open(str(path), readonly=True, lock=False)
    with env.begin() as txn:
        records = [(k, caffe_pb2.Datum.FromString(v)) for k, v in txn.cursor()]
    env.close()
    return records


def test_datums_read_back_equal_the_blobs(tmp_path, model, capsys) -> None:
    net_path, weights = model
    argv = ["extract_features", str(weights), str(net_path), "ip,data", "ip_lmdb,data.npy", "3", "lmdb"]
    assert main.main(argv) == 0
    want = blob_values(net_path, weights, ["ip", "data"], 3)
    records = read_lmdb(tmp_path / "ip_lmdb")
    assert [k for k, _ in records] == [b"%010d" % i for i in range(12)]
    for i, (_, datum) in enumerate(records):
        assert (datum.channels, datum.height, datum.width) == (5, 1, 1) and not datum.data
        # float32 values through the Datum's float field: the same floats, bit for bit
        np.testing.assert_array_equal(np.array(datum.float_data, np.float32), want["ip"][i])
    np.testing.assert_array_equal(np.load(tmp_path / "data.npy"), want["data"])
    assert np.load(tmp_path / "data.npy").shape == (12, 1, 4, 4)
    err = capsys.readouterr().err
    assert "Extracted features of 12 query images for feature blob ip" in err
    assert "Successfully extracted the features!" in err


def test_an_unknown_blob_and_an_existing_db_are_one_line(tmp_path, model, capsys) -> None:
    net_path, weights = model
    argv = ["extract_features", str(weights), str(net_path), "fc7", "f_lmdb", "1", "lmdb"]
    assert main.main(argv) == 2
    assert "Unknown feature blob name fc7" in capsys.readouterr().err
    (tmp_path / "f_lmdb").mkdir()
    assert main.main([*argv[:3], "ip", *argv[4:]]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main.main([*argv[:3], "ip", "g_lmdb", "1", "leveldb"]) == 2
    assert "only lmdb" in capsys.readouterr().err
