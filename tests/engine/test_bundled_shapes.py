"""The bundled MNIST's shapes are facts before it is converted (issue 31 case 8): 1x28x28 grey
images, the batch from the layer, a crop as Caffe's DataTransformer makes it; nothing for other
sources, another backend, or data that is already here (then it is read)."""

from __future__ import annotations

import pytest

from engine.data.bundled import bundled_tops
from engine.data.paths import DataPaths
from engine.data_shapes import BUNDLED, assume
from proto import caffe_pb2


def data_layer(source="examples/mnist/mnist_train_lmdb", backend="LMDB", crop=0, batch=64):
    layer = caffe_pb2.LayerParameter(name="mnist", type="Data", top=["data", "label"])
    layer.data_param.source = source
    layer.data_param.batch_size = batch
    layer.data_param.backend = caffe_pb2.DataParameter.DB.Value(backend)
    if crop:
        layer.transform_param.crop_size = crop
    return layer


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return DataPaths(root=tmp_path / "empty")


def test_the_bundled_lmdbs_have_known_shapes(nowhere):
    assert bundled_tops(data_layer(), nowhere) == [(64, 1, 28, 28), (64,)]
    assert bundled_tops(data_layer("mnist_test_lmdb", batch=100), nowhere) == [(100, 1, 28, 28), (100,)]
    assert bundled_tops(data_layer(crop=24), nowhere) == [(64, 1, 24, 24), (64,)]


@pytest.mark.parametrize(
    "layer",
    [
        data_layer(crop=32),  # larger than the image: the layer's own error says so
        data_layer(backend="LEVELDB"),  # Caffe would not open an LMDB as a LevelDB
        data_layer("cifar10_train_lmdb"),
        data_layer(batch=0),
    ],
)
def test_nothing_is_claimed_for_anything_else(nowhere, layer):
    assert bundled_tops(layer, nowhere) is None


def test_data_that_is_here_is_read_not_assumed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mnist_train_lmdb").mkdir()
    assert bundled_tops(data_layer("mnist_train_lmdb"), DataPaths(root=tmp_path / "empty")) is None


def test_the_assumption_rules_give_it_as_a_fact(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BARISTA_DATA_ROOT", str(tmp_path / "empty"))
    found = assume(data_layer(), caffe_pb2.TRAIN, None)
    assert found is not None and found.origin == BUNDLED and found.fact and found.complete
    assert found.label == "the bundled MNIST" and "assumed" not in found.describe()
