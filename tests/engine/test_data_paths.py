"""Each net looks for its data where its DataPaths say: the run's own search folders and data root,
passed to the build (no global state, so two nets in one process can differ); the bundled MNIST is
found by one function the CLI and the app both call."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format

from engine.data import bundled, mnist, paths
from engine.errors import LayerSetupError
from engine.net import Net
from proto import caffe_pb2
from tests.engine.test_layer_data import uint8_datums, write_lmdb


def data_net(source: str) -> caffe_pb2.NetParameter:
    return text_format.Parse(
        f'layer {{ name: "d" type: "Data" top: "data" top: "label" '
        f'data_param {{ source: "{source}" batch_size: 2 backend: LMDB }} }}',
        caffe_pb2.NetParameter(),
    )


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """A working directory without data, no BARISTA_DATA_ROOT and no prepared bundled copy."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.setattr(paths, "user_data_dir", lambda: tmp_path / "no-user-data")
    return tmp_path


def test_two_nets_in_one_process_look_in_their_own_roots(nowhere):
    one, _ = uint8_datums(2, seed=1)
    two, images_two = uint8_datums(2, seed=2)
    write_lmdb(nowhere / "a" / "mnist_train_lmdb", one)
    write_lmdb(nowhere / "b" / "mnist_train_lmdb", two)
    source = "examples/mnist/mnist_train_lmdb"
    net_a = Net(data_net(source), caffe_pb2.TRAIN, data_paths=paths.DataPaths(root=nowhere / "a"))
    net_b = Net(data_net(source), caffe_pb2.TRAIN, data_paths=paths.DataPaths(root=nowhere / "b"))
    try:
        net_b.forward()
        np.testing.assert_array_equal(net_b.blob_by_name("data").data, images_two[:2])
        assert net_a.layers[0].data_paths.root == nowhere / "a"
        with pytest.raises(LayerSetupError, match="mnist_train_lmdb"):  # the default finds neither
            Net(data_net(source), caffe_pb2.TRAIN)
    finally:
        net_a.close()
        net_b.close()


def test_search_folders_come_before_the_root(nowhere):
    (nowhere / "beside" / "db").mkdir(parents=True)
    (nowhere / "root" / "db").mkdir(parents=True)
    found = paths.DataPaths(search_from=(nowhere / "beside",), root=nowhere / "root")
    assert found.resolve("db") == nowhere / "beside" / "db"
    assert paths.DataPaths(root=nowhere / "root").resolve("x/y/db") == nowhere / "root" / "db"
    assert paths.DEFAULT.resolve("db") == Path("db")  # as given: the error names it


def test_the_environment_is_the_root_unless_a_run_gives_one(nowhere, monkeypatch):
    (nowhere / "env" / "db").mkdir(parents=True)
    (nowhere / "given" / "db").mkdir(parents=True)
    monkeypatch.setenv(paths.ENV_VAR, str(nowhere / "env"))
    assert paths.DEFAULT.resolve("db") == nowhere / "env" / "db"
    assert paths.DEFAULT.with_root(nowhere / "given").resolve("db") == nowhere / "given" / "db"


def test_the_bundled_mnist_only_for_nets_that_miss_it(nowhere, monkeypatch):
    folder = nowhere / "bundled"
    calls = []
    monkeypatch.setattr(mnist, "ensure_mnist", lambda progress=None: calls.append(progress) or folder)
    lenet = [data_net("examples/mnist/mnist_train_lmdb"), data_net("examples/mnist/mnist_test_lmdb")]
    assert bundled.bundled_mnist_for(lenet, paths.DEFAULT) == folder and len(calls) == 1
    assert bundled.bundled_mnist_for([data_net("my_own_lmdb")], paths.DEFAULT) is None
    (nowhere / "mine" / "mnist_train_lmdb").mkdir(parents=True)
    (nowhere / "mine" / "mnist_test_lmdb").mkdir(parents=True)
    assert bundled.bundled_mnist_for(lenet, paths.DataPaths(root=nowhere / "mine")) is None  # found
    assert len(calls) == 1


def test_resolve_takes_the_first_candidate_that_exists(nowhere, monkeypatch):
    (nowhere / "cwd").mkdir()
    monkeypatch.chdir(nowhere / "cwd")
    net = nowhere / "project" / "nets" / "net.prototxt"
    net.parent.mkdir(parents=True)
    found = paths.DataPaths.beside(net).with_root(nowhere / "root")
    tries = list(found.candidates("db/x_lmdb"))
    assert tries[:3] == [Path("db/x_lmdb"), net.parent / "db/x_lmdb", nowhere / "project" / "db/x_lmdb"]
    assert tries[-2:] == [nowhere / "root" / "db/x_lmdb", nowhere / "root" / "x_lmdb"]
    inside = [t for t in tries[1:] if nowhere in t.parents]  # the test writes under tmp_path only
    assert len(inside) == 5
    for made in reversed(inside):  # the nearer place wins as each appears
        made.mkdir(parents=True)
        assert found.resolve("db/x_lmdb") == made
    assert list(found.candidates(nowhere / "abs")) == [nowhere / "abs"]
    assert list(paths.DataPaths().candidates("x")) == [Path("x")]  # no root prepared yet
    to_come = nowhere / "no-user-data" / "mnist"
    assert list(paths.DataPaths().candidates("a/x", to_come=True)) == [
        Path("a/x"),
        to_come / "a/x",
        to_come / "x",
    ]
