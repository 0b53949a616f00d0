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


# --- Caffe's FilterNetTest cases (test_net.cpp) -----------------------------------------------------

DATA = "layer { name: 'data' type: 'Data' top: 'data' top: 'label' RULE_D }"
IP = "layer { name: 'innerprod' type: 'InnerProduct' bottom: 'data' top: 'innerprod' RULE_I }"
LOSS = "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'innerprod' bottom: 'label' RULE_L }"


def three_layers(state: str = "", d: str = "", i: str = "", loss: str = "", keep: str = "dil") -> str:
    parts = {"d": DATA.replace("RULE_D", d), "i": IP.replace("RULE_I", i), "l": LOSS.replace("RULE_L", loss)}
    return f"{state} name: 'TestNetwork' " + " ".join(parts[k] for k in keep)


FILTER_CASES = {
    "NoFilter": (three_layers(), "dil"),
    "FilterOutByStage": (three_layers(d="include { stage: 'mystage' }"), "il"),
    "FilterOutByStage2": (three_layers(i="include { stage: 'mystage' }"), "dl"),
    "FilterInByStage": (three_layers("state { stage: 'mystage' }", i="include { stage: 'mystage' }"), "dil"),
    "FilterInByStage2": (three_layers(i="exclude { stage: 'mystage' }"), "dil"),
    "FilterOutByMultipleStage": (
        three_layers(
            "state { stage: 'mystage' }",
            i="include { stage: 'mystage' stage: 'myotherstage' }",
            loss="include { stage: 'mystage' }",
        ),
        "dl",
    ),
    "FilterInByMultipleStage": (
        three_layers(
            "state { stage: 'mystage' }",
            i="include { stage: 'myotherstage' } include { stage: 'mystage' }",
            loss="include { stage: 'mystage' }",
        ),
        "dil",
    ),
    "FilterInByMultipleStage2": (
        three_layers(
            "state { stage: 'mystage' stage: 'myotherstage' }",
            i="include { stage: 'mystage' stage: 'myotherstage' }",
            loss="include { stage: 'mystage' }",
        ),
        "dil",
    ),
    "FilterInByNotStage": (
        three_layers(
            "state { stage: 'mystage' }",
            i="include { not_stage: 'myotherstage' }",
            loss="include { not_stage: 'myotherstage' }",
        ),
        "dil",
    ),
    "FilterOutByNotStage": (
        three_layers(
            "state { stage: 'mystage' }",
            i="include { not_stage: 'mystage' }",
            loss="include { not_stage: 'mystage' }",
        ),
        "d",
    ),
    "FilterOutByMinLevel": (three_layers(i="include { min_level: 3 }"), "dl"),
    "FilterOutByMaxLevel": (three_layers(i="include { max_level: -3 }"), "dl"),
    "FilterInByMinLevel": (three_layers(i="include { min_level: 0 }"), "dil"),
    "FilterInByMinLevel2": (three_layers("state { level: 7 }", i="include { min_level: 3 }"), "dil"),
    "FilterInByMaxLevel": (three_layers(i="include { max_level: 0 }"), "dil"),
    "FilterInByMaxLevel2": (three_layers("state { level: -7 }", i="include { max_level: -3 }"), "dil"),
    "FilterInOutByIncludeMultiRule/TRAIN": (
        three_layers(
            "state { level: 4 phase: TRAIN }",
            i="include { min_level: 2 phase: TRAIN }",
            loss="include { min_level: 2 phase: TEST }",
        ),
        "di",
    ),
    "FilterInOutByIncludeMultiRule/TEST": (
        three_layers(
            "state { level: 4 phase: TEST }",
            i="include { min_level: 2 phase: TRAIN }",
            loss="include { min_level: 2 phase: TEST }",
        ),
        "dl",
    ),
    "FilterInByIncludeMultiRule/TRAIN": (
        three_layers(
            "state { level: 2 phase: TRAIN }",
            i="include { min_level: 2 phase: TRAIN } include { phase: TEST }",
            loss="include { min_level: 2 phase: TEST } include { phase: TRAIN }",
        ),
        "dil",
    ),
    "FilterInByIncludeMultiRule/TEST": (
        three_layers(
            "state { level: 2 phase: TEST }",
            i="include { min_level: 2 phase: TRAIN } include { phase: TEST }",
            loss="include { min_level: 2 phase: TEST } include { phase: TRAIN }",
        ),
        "dil",
    ),
    "FilterInOutByExcludeMultiRule/TRAIN": (
        three_layers(
            "state { level: 4 phase: TRAIN }",
            i="exclude { min_level: 2 phase: TRAIN }",
            loss="exclude { min_level: 2 phase: TEST }",
        ),
        "dl",
    ),
    "FilterInOutByExcludeMultiRule/TEST": (
        three_layers(
            "state { level: 4 phase: TEST }",
            i="exclude { min_level: 2 phase: TRAIN }",
            loss="exclude { min_level: 2 phase: TEST }",
        ),
        "di",
    ),
}


@pytest.mark.parametrize("case", FILTER_CASES)
def test_caffe_filter_net_cases(case):
    given, keep = FILTER_CASES[case]
    param = text_format.Parse(given, caffe_pb2.NetParameter())
    expected = caffe_pb2.NetParameter()
    expected.CopyFrom(param)
    del expected.layer[:]
    expected.layer.extend(layer for layer in param.layer if layer.name[0] in keep)
    filtered = filter_net(param)
    assert text_format.MessageToString(filtered) == text_format.MessageToString(expected)  # state kept
    assert filter_net(filtered) == filtered  # idempotent


def test_caffe_filter_lenet_train_test():
    text = """
    name: 'LeNet'
    layer { name: 'mnist' type: 'Data' top: 'data' top: 'label' data_param { source: 'train' batch_size: 64 }
            include { phase: TRAIN } }
    layer { name: 'mnist' type: 'Data' top: 'data' top: 'label' data_param { source: 'test' batch_size: 100 }
            include { phase: TEST } }
    layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1' }
    layer { name: 'accuracy' type: 'Accuracy' bottom: 'conv1' bottom: 'label' top: 'accuracy'
            include { phase: TEST } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'conv1' bottom: 'label' top: 'loss' }
    """
    for phase, source, names in (("TRAIN", "train", ["mnist", "conv1", "loss"]),
                                 ("TEST", "test", ["mnist", "conv1", "accuracy", "loss"])):  # fmt: skip
        filtered = filter_net(
            text_format.Parse(f"state {{ phase: {phase} }}" + text, caffe_pb2.NetParameter())
        )
        assert [layer.name for layer in filtered.layer] == names
        assert filtered.layer[0].data_param.source == source
        assert caffe_pb2.Phase.Name(filtered.state.phase) == phase
