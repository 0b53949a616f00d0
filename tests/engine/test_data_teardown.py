"""#16 case 2, in process: closing a net joins its prefetch threads and then closes its sources, and
the exit hook does the same for nets nobody closed (the order that keeps exit from crashing)."""

from __future__ import annotations

import threading

import h5py
import numpy as np
import pytest
from google.protobuf import text_format

from engine.data import lmdb_source, teardown
from engine.data.lmdb_writer import write_datum_lmdb
from engine.errors import EngineError
from engine.net import Net
from proto import caffe_pb2


def prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "data-prefetch" and t.is_alive()]


@pytest.fixture
def two_sources(tmp_path) -> caffe_pb2.NetParameter:
    images = np.random.default_rng(0).integers(0, 256, (12, 1, 4, 4)).astype(np.uint8)
    write_datum_lmdb(tmp_path / "db", images, np.arange(12))
    with h5py.File(tmp_path / "rows.h5", "w") as f:
        f["rows"] = np.arange(24, dtype=np.float32).reshape(12, 2)
    (tmp_path / "list.txt").write_text(str(tmp_path / "rows.h5"))
    return text_format.Parse(
        f"""layer {{ name: "d" type: "Data" top: "data" top: "label"
              data_param {{ source: "{tmp_path / "db"}" batch_size: 3 backend: LMDB }} }}
            layer {{ name: "h" type: "HDF5Data" top: "rows"
              hdf5_data_param {{ source: "{tmp_path / "list.txt"}" batch_size: 3 }} }}""",
        caffe_pb2.NetParameter(),
    )


def test_net_close_joins_the_threads_then_closes_the_database(two_sources):
    before = set(prefetch_threads())
    net = Net(two_sources)
    net.forward()
    mine = set(prefetch_threads()) - before
    assert len(mine) == 2  # one thread per data layer, reading ahead
    assert any(k.endswith("/db") for k in lmdb_source._envs)
    net.close()
    assert not any(t.is_alive() for t in mine)
    assert not any(k.endswith("/db") for k in lmdb_source._envs)  # the environment is closed
    with pytest.raises(EngineError, match="closed"):
        net.forward()


def test_the_exit_hook_stops_nets_nobody_closed(two_sources):
    net = Net(two_sources)
    net.forward()
    mine = set(prefetch_threads())
    assert mine
    teardown.close_all()  # what atexit runs
    assert not any(t.is_alive() for t in mine)
    assert not any(k.endswith("/db") for k in lmdb_source._envs)
    del net
