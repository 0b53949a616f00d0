"""Fields a Caffe fork adds (``ceil_mode`` in DenseNet/ResNet ports): one error listing each with
file:line:col, and a read without them that drops exactly those fields."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import pytest

from proto import caffe_pb2
from proto.errors import FormatError, UnknownFieldsError
from proto.textio import dropping_unknown_fields, parse_net, parse_solver, read_net

FORK = """name: "densenet-ish"
layer { name: "data" type: "Input" top: "data"
  input_param { shape { dim: 1 dim: 3 dim: 32 dim: 32 } } }
layer {
  name: "pool1"  type: "Pooling"  bottom: "data"  top: "pool1"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 ceil_mode: false }
}
layer { name: "conv"; type: "Convolution"; bottom: "pool1"; top: "conv";
  convolution_param { num_output: 4 kernel_size: 1 }
  fork_param { scale: [1, 2, 3] nested { deep: "a" "b" } } }
layer { name: "pool2" type: "Pooling" bottom: "conv" top: "pool2"
  pooling_param { pool: AVE kernel_size: 2 ceil_mode: true stride: 2 } }
fork_level: 3
"""
FORK_PARAM = 'fork_param { scale: [1, 2, 3] nested { deep: "a" "b" } }'


def _without(text: str, *pieces: str) -> str:
    for piece in pieces:
        assert piece in text
        text = text.replace(piece, "")
    return text


def test_every_unknown_field_is_listed_with_its_place(tmp_path: Path):
    path = tmp_path / "fork.prototxt"
    path.write_text(FORK)
    with pytest.raises(UnknownFieldsError) as info:
        read_net(path)
    error = info.value
    assert isinstance(error, FormatError)
    assert [(f.line, f.column, f.describe()) for f in error.fields] == [
        (6, 54, "pooling_param.ceil_mode (layer 'pool1')"),
        (10, 3, "fork_param (layer 'conv')"),
        (12, 44, "pooling_param.ceil_mode (layer 'pool2')"),
        (13, 1, "fork_level"),
    ]
    assert [f.message_type for f in error.fields] == [
        "caffe.PoolingParameter", "caffe.LayerParameter", "caffe.PoolingParameter", "caffe.NetParameter"
    ]  # fmt: skip
    text = str(error)
    assert "\n" not in text
    assert text.startswith(f"{path}:6:54: 4 fields BVLC Caffe's schema lacks: ")
    for where in ("6:54", "10:3", "12:44", "13:1"):
        assert f"{path}:{where} " in text
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == text and again.fields == error.fields


def test_reading_without_them_drops_only_those_fields():
    net = parse_net(FORK, "fork.prototxt", drop_unknown=True)
    clean = parse_net(_without(FORK, "ceil_mode: false", "ceil_mode: true", "fork_level: 3", FORK_PARAM))
    assert net == clean
    assert [l.name for l in net.layer] == ["data", "pool1", "conv", "pool2"]
    assert net.layer[3].pooling_param.stride == 2  # the field after the dropped one survives
    assert net.layer[3].pooling_param.pool == caffe_pb2.PoolingParameter.AVE


def test_dropping_says_what_it_dropped(caplog):
    with caplog.at_level(logging.WARNING, logger="proto.textio"):
        parse_net(FORK, "fork.prototxt", drop_unknown=True)
    (record,) = caplog.records
    notice = "fork.prototxt: read without the fields BVLC Caffe's schema lacks: 6:54 "
    assert record.getMessage().startswith(notice)
    reports: list[UnknownFieldsError] = []
    with dropping_unknown_fields(reports.append):
        net = parse_net(FORK, "fork.prototxt")
    assert len(net.layer) == 4 and [len(r.fields) for r in reports] == [4]
    with pytest.raises(UnknownFieldsError):
        parse_net(FORK)  # the block's policy ends with it


def test_one_unknown_field_reads_as_protobuf_words_it():
    with pytest.raises(UnknownFieldsError) as info:
        parse_net(_without(FORK, "ceil_mode: true", "fork_level: 3", FORK_PARAM), "f")
    assert str(info.value) == 'f:6:54: Message type "caffe.PoolingParameter" has no field named "ceil_mode".'
    assert (info.value.line, info.value.column) == (6, 54)


def test_the_wrong_kind_of_file_is_not_offered_without_its_fields():
    with pytest.raises(FormatError) as info:
        parse_net('net: "n.prototxt"\nbase_lr: 0.01\n', "s.prototxt")
    assert not isinstance(info.value, UnknownFieldsError)
    assert str(info.value) == 's.prototxt:1:1: Message type "caffe.NetParameter" has no field named "net".'


def test_another_mistake_is_reported_as_itself_not_as_unknown_fields():
    broken = FORK.replace("kernel_size: 2", "kernel_size: two")
    with pytest.raises(FormatError) as info:
        parse_net(broken, "fork.prototxt", drop_unknown=True)
    assert not isinstance(info.value, UnknownFieldsError)
    line = broken.split("\n")[11]
    assert (info.value.line, info.value.column) == (12, line.index("two") + 1)
    assert "two" in str(info.value)


def test_a_typo_in_a_known_message_is_an_unknown_field_too():
    with pytest.raises(UnknownFieldsError) as info:
        parse_solver('net: "n.prototxt"\nbase_lr: 0.01\nlr_polcy: "fixed"\n', "s.prototxt")
    assert [(f.line, f.column, f.describe()) for f in info.value.fields] == [(3, 1, "lr_polcy")]
    solver = parse_solver('net: "n.prototxt"\nlr_polcy: "fixed"\n', drop_unknown=True)
    assert solver.net == "n.prototxt" and not solver.HasField("lr_policy")


def test_text_the_scan_cannot_follow_falls_back_to_the_parsers_error():
    with pytest.raises(FormatError) as info:
        parse_net('layer { name: "a" [ext.thing]: 1 }')
    assert not isinstance(info.value, UnknownFieldsError)
