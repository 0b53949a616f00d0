"""HDF5Output: the file Caffe writes (datasets data and label, 4-D legacy shapes, the net's float
type), created at setup, batches appended, read back by HDF5Data; errors name the layer."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from google.protobuf import text_format

from engine.errors import LayerSetupError
from engine.net import Net
from engine.testing import host, make_layer, random_blob
from proto import caffe_pb2


def output_layer(xp, path, dtype=np.float32):
    return make_layer(
        f'name: "out" type: "HDF5Output" bottom: "data" bottom: "label" '
        f'hdf5_output_param {{ file_name: "{path}" }}',
        xp,
        dtype=dtype,
    )


def test_forward_writes_data_and_label_with_legacy_4d_shapes(xp, tmp_path):
    path = tmp_path / "out.h5"
    layer = output_layer(xp, path)
    data = random_blob((2, 3, 4, 5), xp, np.float32, seed=1)
    label = random_blob((2, 6), xp, np.float32, seed=2)  # (N, D) is stored as (N, D, 1, 1)
    layer.setup([data, label], [])
    assert not path.exists()  # created by the first forward, not by building the net
    layer.forward([data, label], [])
    layer.backward([], [True, True], [data, label])  # nothing flows back, and no error
    with h5py.File(path, "r") as f:
        assert set(f) == {"data", "label"}
        assert f["data"].dtype == np.float32 and f["data"].shape == (2, 3, 4, 5)
        assert f["label"].shape == (2, 6, 1, 1)
        np.testing.assert_array_equal(f["data"][()], host(data.data))
        np.testing.assert_array_equal(f["label"][()][:, :, 0, 0], host(label.data))


def test_later_batches_are_appended_and_a_double_net_writes_doubles(tmp_path):
    path = tmp_path / "out.h5"
    layer = output_layer(np, path, np.float64)
    batches = [(random_blob((3,), seed=s), random_blob((3,), seed=s + 10)) for s in range(2)]
    layer.setup(list(batches[0]), [])
    for data, label in batches:
        layer.forward([data, label], [])
    with h5py.File(path, "r") as f:
        assert f["data"].dtype == np.float64 and f["data"].shape == (6, 1, 1, 1)
        np.testing.assert_array_equal(f["data"][()].ravel(), np.concatenate([b[0].data for b in batches]))
        np.testing.assert_array_equal(f["label"][()].ravel(), np.concatenate([b[1].data for b in batches]))


def test_the_first_forward_replaces_an_existing_file(tmp_path):
    path = tmp_path / "out.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("old", data=np.zeros(3))
    layer = output_layer(np, path)
    layer.setup([random_blob((1,)), random_blob((1,))], [])
    with h5py.File(path, "r") as f:
        assert list(f) == ["old"]  # building the net leaves it alone
    layer.forward([random_blob((1,)), random_blob((1,))], [])
    with h5py.File(path, "r") as f:
        assert sorted(f) == ["data", "label"]


def test_a_link_planted_at_the_file_name_is_refused_not_written_through(tmp_path):
    """Issue 32 case 2: h5py.File(name, "w") truncated the link's target."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (tmp_path / "out.h5").symlink_to(victim)
    layer = output_layer(np, tmp_path / "out.h5")
    layer.setup([random_blob((1,)), random_blob((1,))], [])
    with pytest.raises(LayerSetupError, match="it is a symbolic link .*refusing to write through it"):
        layer.forward([random_blob((1,)), random_blob((1,))], [])
    assert victim.read_text() == "keep"


def test_in_a_net_the_file_is_readable_by_hdf5data(tmp_path):
    path = tmp_path / "features.h5"
    net = Net(
        text_format.Parse(
            f"""
            layer {{ name: "in" type: "Input" top: "data" top: "label"
                    input_param {{ shape {{ dim: 4 dim: 2 }} shape {{ dim: 4 }} }} }}
            layer {{ name: "out" type: "HDF5Output" bottom: "data" bottom: "label"
                    hdf5_output_param {{ file_name: "{path}" }} }}
            """,
            caffe_pb2.NetParameter(),
        )
    )
    net.blob_by_name("data").data[...] = np.arange(8).reshape(4, 2)
    net.blob_by_name("label").data[...] = [5, 6, 7, 8]
    net.forward_from_to()
    (tmp_path / "list.txt").write_text(f"{path}\n")
    reader = Net(
        text_format.Parse(
            f"""
            layer {{ name: "h" type: "HDF5Data" top: "data" top: "label"
                    hdf5_data_param {{ source: "{tmp_path / "list.txt"}" batch_size: 4 }} }}
            """,
            caffe_pb2.NetParameter(),
        )
    )
    reader.forward_from_to()
    np.testing.assert_array_equal(reader.blob_by_name("data").data.reshape(4, 2), np.arange(8).reshape(4, 2))
    np.testing.assert_array_equal(reader.blob_by_name("label").data.ravel(), [5, 6, 7, 8])
    reader.close()


def test_errors_name_the_layer(tmp_path):
    with pytest.raises(LayerSetupError, match="'out'.*Failed to open HDF5 file"):
        output_layer(np, tmp_path / "missing" / "x.h5").setup([random_blob((1,)), random_blob((1,))], [])
    layer = output_layer(np, tmp_path / "x.h5")
    with pytest.raises(LayerSetupError, match="exactly 2 bottom"):
        layer.setup([random_blob((1,))], [])
    layer.setup([random_blob((2, 1)), random_blob((3,))], [])
    with pytest.raises(LayerSetupError, match="same batch size: 2 vs 3"):
        layer.forward([random_blob((2, 1)), random_blob((3,))], [])
    with pytest.raises(LayerSetupError, match="5 axes"):
        layer.forward([random_blob((1, 1, 1, 1, 1)), random_blob((1,))], [])


def test_a_full_disk_is_one_line_and_no_segfault(tmp_path):
    """Issue 32 case 8 for HDF5Output: HDF5 failing to write inside h5py ended in ignored finaliser
    tracebacks and a segfault at exit. The full disk is a file-size limit in a child process."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "net.prototxt").write_text(
        'layer { name: "data" type: "DummyData" top: "x" top: "label" dummy_data_param {\n'
        "  shape { dim: 100 dim: 1000 } shape { dim: 100 } } }\n"
        'layer { name: "out" type: "HDF5Output" bottom: "x" bottom: "label"\n'
        '  hdf5_output_param { file_name: "rows.h5" } }\n'
    )
    limited = (
        "import resource, runpy, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, 1_000_000))\n"
        "sys.argv = sys.argv[1:]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", limited, str(repo / "main.py"), "time", "--model", "net.prototxt"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(repo)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = [line for line in done.stderr.splitlines() if not line.startswith("I")]
    assert done.returncode == 2, done.stderr[-2000:]
    assert errors == [
        "error: layer 'out' (HDF5Output): Failed to write HDF5 file rows.h5: cannot write the HDF5 file: "
        "File too large"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.prototxt"]
