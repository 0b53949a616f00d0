"""Shapes without the data: GoogLeNet- and CIFAR-like train_val nets whose LMDBs (and mean file) are
not here still get every shape, from the layer's own fields, a deploy net beside them, a typed
assumption or the shapes recorded when the source was last read, and the numbers are those of the
same net fed by an Input of that shape. Problems say what the shapes rest on, in full."""

from __future__ import annotations

import math
from pathlib import Path

import lmdb
import numpy as np
import pytest
from google.protobuf import text_format
from real_nets import write_cifar, write_googlenet

from engine import data_shapes
from engine.data_shapes import DEPLOY, LAYER, RECORDED, TYPED, Hints
from graph_view.graph import Graph, build
from graph_view.validation import WARNING, validate
from proto import caffe_pb2, textio
from proto.binaryio import write_blob

TRAIN, TEST = caffe_pb2.TRAIN, caffe_pb2.TEST


@pytest.fixture(autouse=True)
def _elsewhere(tmp_path, monkeypatch):
    """Run where the nets' relative sources do not exist (as after a download)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BARISTA_DATA_ROOT", str(tmp_path / "no-data-here"))


def _graph(path: Path, phase: int = TRAIN, **hints) -> Graph:
    return build(textio.read_net(path), phase, hints=Hints(net_path=str(path), **hints))


def _every_shape_known(graph: Graph) -> None:
    missing = [k for k, s in graph.shapes.items() if None in s.tops]
    assert missing == []
    assert all(e.shape is not None for e in graph.edges)


def _fed_by_input(path: Path, phase: int, shape: tuple[int, ...]) -> Graph:
    """The same net with its data layers replaced by an Input of ``shape`` and a label Input."""
    net = textio.read_net(path)
    for layer in net.layer:
        if layer.type == "Data":
            layer.type = "Input"
            layer.ClearField("data_param")
            layer.ClearField("transform_param")
            layer.input_param.shape.add().dim.extend(shape)
            layer.input_param.shape.add().dim.extend(shape[:1])
    return build(net, phase)


def test_googlenet_like_train_val_without_its_lmdb_shows_every_shape(tmp_path):
    path = write_googlenet(tmp_path, deploy=False)
    for phase, batch in ((TRAIN, 32), (TEST, 50)):
        graph = _graph(path, phase)
        _every_shape_known(graph)
        data = graph.shapes["data"]
        assert data.tops == [(batch, 3, 224, 224), (batch,)]
        assert data.assumed is not None and data.assumed.origin == LAYER
        assert data.assumed.reason == f"the layer's 3 mean_values, crop_size 224 and batch_size {batch}"
        assert graph.shapes["inception_4a/output"].tops == [(batch, 512, 14, 14)]
        assert graph.shapes["loss3/classifier"].tops == [(batch, 1000)]
        # every wire, parameter count and FLOP figure is the one an Input of that shape gives
        fed = _fed_by_input(path, phase, (batch, 3, 224, 224))
        assert {k: s.tops for k, s in graph.shapes.items()} == {k: s.tops for k, s in fed.shapes.items()}
        assert [(e.blob, e.shape) for e in graph.edges] == [(e.blob, e.shape) for e in fed.edges]
        assert graph.total_params == fed.total_params > 4_000_000
        assert graph.total_flops == pytest.approx(fed.total_flops) and graph.total_flops > 1e9
        assert {k: n.flops for k, n in graph.nodes.items()} == {k: n.flops for k, n in fed.nodes.items()}


def test_the_warning_says_what_was_not_read_and_what_the_shapes_rest_on(tmp_path):
    graph = _graph(write_googlenet(tmp_path, deploy=False))
    (problem,) = [p for p in validate(graph) if p.key == "data"]
    assert problem.severity == WARNING
    assert problem.message.startswith("data not read (")
    assert "cannot open the LMDB examples/imagenet/ilsvrc12_train_lmdb" in problem.message
    assert problem.message.endswith(
        "shapes assumed from the layer's 3 mean_values, crop_size 224 and batch_size 32"
    )


def test_a_deploy_net_beside_it_comes_before_the_layers_own_fields(tmp_path):
    graph = _graph(write_googlenet(tmp_path))
    data = graph.shapes["data"]
    assert data.tops == [(32, 3, 224, 224), (32,)]  # the deploy's 3x224x224 with this layer's batch
    assert data.assumed is not None and data.assumed.origin == DEPLOY
    assert data.assumed.reason == "deploy.prototxt (with batch_size 32)"


def test_a_deploy_net_feeding_other_layers_is_not_used(tmp_path):
    path = write_googlenet(tmp_path)
    deploy = path.parent / "deploy.prototxt"
    deploy.write_text(deploy.read_text().replace("conv1/7x7_s2", "conv1_other"))
    assert _graph(path).shapes["data"].assumed.origin == LAYER


def test_cifar_like_with_no_mean_file_and_no_deploy_asks_for_a_shape(tmp_path):
    path = write_cifar(tmp_path, deploy=False)
    graph = _graph(path)
    cifar = graph.shapes["cifar"]
    assert cifar.tops == [None, (100,)]  # the label's batch is known, the image's size is not
    assert graph.shapes["conv1"].tops == [None]
    problems = [p for p in validate(graph) if p.key == "cifar"]
    assert all(p.severity == WARNING for p in problems)
    messages = [p.message for p in problems]
    assert any("--input-shape data=N,C,H,W" in m and "inspector" in m for m in messages)
    mean = [m for m in messages if "mean file" in m]
    assert mean == [
        "cannot read the mean file examples/cifar10/mean.binaryproto: No such file or directory "
        "(it changes no shape: the shapes are found without it)"
    ]


def test_cifar_like_with_a_typed_shape_shows_every_shape(tmp_path):
    path = write_cifar(tmp_path, deploy=False)
    for phase in (TRAIN, TEST):
        graph = _graph(path, phase, typed={"data": (100, 3, 32, 32)})
        _every_shape_known(graph)
        cifar = graph.shapes["cifar"]
        assert cifar.tops == [(100, 3, 32, 32), (100,)]
        assert cifar.assumed.origin == TYPED
        assert graph.shapes["ip2"].tops == [(100, 10)]
        assert graph.total_params == 145578  # CIFAR-10 quick's published parameter count


def test_cifar_like_with_its_deploy_net_shows_every_shape(tmp_path):
    graph = _graph(write_cifar(tmp_path), TEST)
    _every_shape_known(graph)
    assert graph.shapes["cifar"].assumed.reason == "cifar10_quick.prototxt (with batch_size 100)"
    assert graph.shapes["pool3"].tops == [(100, 64, 4, 4)]


def test_a_mean_file_that_is_there_gives_channels_and_size(tmp_path):
    path = write_cifar(tmp_path, deploy=False)
    mean = path.parent / "mean.binaryproto"
    blob = caffe_pb2.BlobProto(num=1, channels=3, height=32, width=32)
    blob.data.extend(np.zeros(3 * 32 * 32, np.float32).tolist())
    write_blob(mean, blob)
    net = textio.read_net(path)
    for layer in net.layer:
        layer.transform_param.mean_file = str(mean)
    graph = build(net, TRAIN, hints=Hints(net_path=str(path)))
    _every_shape_known(graph)
    assert graph.shapes["cifar"].assumed.reason == "the layer's 3x32x32 mean file and batch_size 100"
    assert not any("cannot read the mean file" in p.message for p in validate(graph))


def test_a_mean_file_missing_beside_a_readable_lmdb_costs_no_shape(tmp_path):
    path = write_cifar(tmp_path, deploy=False)
    env = lmdb.open(str(tmp_path / "examples/cifar10/cifar10_train_lmdb"), map_size=1 << 22)
    datum = caffe_pb2.Datum(channels=3, height=32, width=32, data=bytes(3 * 32 * 32), label=1)
    with env.begin(write=True) as txn:
        txn.put(b"00000000", datum.SerializeToString())
    env.close()
    graph = _graph(path)  # run from tmp_path: examples/cifar10/... is found, the mean file is not
    cifar = graph.shapes["cifar"]
    assert cifar.tops == [(100, 3, 32, 32), (100,)] and cifar.assumed is None and cifar.error is None
    assert [p.severity for p in validate(graph) if p.key == "cifar"] == [WARNING]
    # a source that was read is recorded; without it later, the recorded shapes are used
    assert graph.read_shapes == {"TRAIN/cifar": [(100, 3, 32, 32), (100,)]}
    (tmp_path / "examples/cifar10/cifar10_train_lmdb/data.mdb").unlink()
    again = _graph(path, recorded=graph.read_shapes)
    assert again.shapes["cifar"].tops == [(100, 3, 32, 32), (100,)]
    assert again.shapes["cifar"].assumed.origin == RECORDED
    _every_shape_known(again)


def test_leveldb_is_a_warning_in_full_and_the_shapes_stay(tmp_path):
    net = text_format.Parse(
        """
        layer { name: "pair_data" type: "Data" top: "pair_data" top: "sim" include { phase: TRAIN }
          transform_param { scale: 0.00390625 }
          data_param { source: "examples/siamese/mnist_siamese_train_leveldb" batch_size: 64
                       backend: LEVELDB } }
        layer { name: "slice_pair" type: "Slice" bottom: "pair_data" top: "data" top: "data_p"
          slice_param { slice_dim: 1 slice_point: 1 } }
        layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
          inner_product_param { num_output: 10 } }
        """,
        caffe_pb2.NetParameter(),
    )
    unknown = build(net, TRAIN)
    (problem,) = [p for p in validate(unknown) if p.key == "pair_data"]
    assert "the LEVELDB backend is not supported, only LMDB" in problem.message
    advice = "copy its records into an LMDB, key by key"  # not convert_imageset: that reads images
    assert problem.message.count(advice) == 1  # the whole message, once
    assert unknown.shapes["pair_data"].tops == [None, (64,)]
    typed = build(net, TRAIN, hints=Hints(typed={"pair_data": (64, 2, 28, 28)}))
    assert typed.shapes["slice_pair"].tops == [(64, 1, 28, 28), (64, 1, 28, 28)]
    assert typed.shapes["ip"].params == [(10, 784), (10,)]
    assert typed.shapes["pair_data"].tops[1] == (64,)


def test_image_data_says_its_size_and_colour(tmp_path):
    net = text_format.Parse(
        """
        layer { name: "images" type: "ImageData" top: "data" top: "label"
          transform_param { crop_size: 227 }
          image_data_param { source: "absent_list.txt" batch_size: 8 new_height: 256 new_width: 256 } }
        layer { name: "gray" type: "ImageData" top: "g" top: "gl"
          image_data_param { source: "absent.txt" batch_size: 2 new_height: 60 new_width: 40
                             is_color: false } }
        """,
        caffe_pb2.NetParameter(),
    )
    graph = build(net, TRAIN)
    assert graph.shapes["images"].tops == [(8, 3, 227, 227), (8,)]
    assert graph.shapes["gray"].tops == [(2, 1, 60, 40), (2,)]
    assert graph.shapes["gray"].assumed.reason == (
        "the layer's is_color false, new_height 60 and new_width 40 and batch_size 2"
    )


def test_a_readable_source_is_never_overridden_by_a_guess(tmp_path):
    # MemoryData and Input read no source: their shapes are theirs, never assumed.
    net = text_format.Parse(
        'layer { name: "m" type: "MemoryData" top: "d" top: "l"\n'
        "  memory_data_param { batch_size: 4 channels: 1 height: 5 width: 5 } }",
        caffe_pb2.NetParameter(),
    )
    graph = build(net, TRAIN, hints=Hints(typed={"d": (9, 9, 9, 9)}))
    assert graph.shapes["m"].tops == [(4, 1, 5, 5), (4,)] and graph.assumed == {}


def test_parse_shape_refuses_what_is_not_a_shape():
    assert data_shapes.parse_shape("32,3,224,224") == (32, 3, 224, 224)
    assert data_shapes.parse_shape("100x3x32x32") == (100, 3, 32, 32)
    for bad, words in (("", "give the dimensions"), ("3,a", "whole numbers"), ("3,0", "positive")):
        with pytest.raises(ValueError, match=words):
            data_shapes.parse_shape(bad)
    assert math.prod(data_shapes.parse_shape("1,1")) == 1
