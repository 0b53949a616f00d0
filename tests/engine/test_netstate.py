"""FilterNet: include/exclude rules on phase, level and stages."""

from __future__ import annotations

import pytest
from google.protobuf import text_format

from engine.errors import NetError
from engine.netstate import filter_net, make_state, state_meets_rule
from proto import caffe_pb2

NET = """
layer { name: "always" type: "Input" top: "x" }
layer { name: "train" type: "ReLU" bottom: "x" top: "t" include { phase: TRAIN } }
layer { name: "test" type: "ReLU" bottom: "x" top: "u" include { phase: TEST } }
layer { name: "not_test" type: "ReLU" bottom: "x" top: "v" exclude { phase: TEST } }
layer { name: "deep" type: "ReLU" bottom: "x" top: "w" include { min_level: 2 } }
layer { name: "shallow" type: "ReLU" bottom: "x" top: "y" include { max_level: 0 } }
layer { name: "staged" type: "ReLU" bottom: "x" top: "z" include { stage: "a" stage: "b" } }
layer { name: "unstaged" type: "ReLU" bottom: "x" top: "q" include { not_stage: "a" } }
layer { name: "either" type: "ReLU" bottom: "x" top: "e" include { stage: "a" } include { phase: TEST } }
"""


def kept(phase=caffe_pb2.TRAIN, level=0, stages=()):
    param = text_format.Parse(NET, caffe_pb2.NetParameter())
    return [layer.name for layer in filter_net(param, make_state(phase, level, stages)).layer]


def test_phase_rules():
    assert kept(caffe_pb2.TRAIN) == ["always", "train", "not_test", "shallow", "unstaged"]
    assert kept(caffe_pb2.TEST) == ["always", "test", "shallow", "unstaged", "either"]


def test_level_bounds():
    assert "deep" in kept(level=2)
    assert "deep" not in kept(level=1)
    assert "shallow" not in kept(level=1)


def test_stages_need_all_and_not_stage_needs_none():
    assert "staged" not in kept(stages=["a"])
    assert "staged" in kept(stages=["b", "a"])
    assert "unstaged" not in kept(stages=["a"])
    assert "either" in kept(stages=["a"])


def test_state_defaults_come_from_the_net():
    param = text_format.Parse(NET + "state { phase: TEST }", caffe_pb2.NetParameter())
    assert [layer.name for layer in filter_net(param).layer][1] == "test"


def test_rule_without_conditions_is_met():
    assert state_meets_rule(make_state(), caffe_pb2.NetStateRule())


def test_include_and_exclude_together_is_an_error():
    param = text_format.Parse(
        'layer { name: "bad" type: "ReLU" include { phase: TRAIN } exclude { phase: TEST } }',
        caffe_pb2.NetParameter(),
    )
    with pytest.raises(NetError, match="'bad'.*either include rules or exclude rules"):
        filter_net(param)
