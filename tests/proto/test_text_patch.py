"""proto.text_patch: an edited message written back into the user's text, only where it changed."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

import pytest

from proto import caffe_pb2
from proto.text_patch import patch_text
from proto.textio import parse_net, parse_solver

LENET = Path(__file__).parents[2] / "resources" / "examples" / "mnist" / "lenet_train_test.prototxt"

# A file in other people's habits: tabs, ``layer: <``, separators, a list, comments inside blocks.
STYLED = (Path(__file__).parents[1] / "data" / "text_styles" / "styled.prototxt").read_text()


def edited(text: str, edit: Callable[[caffe_pb2.NetParameter], object]) -> tuple[str, caffe_pb2.NetParameter]:
    old = parse_net(text, upgrade=False)
    new = caffe_pb2.NetParameter()
    new.CopyFrom(old)
    edit(new)
    patched = patch_text(text, old, new)
    assert patched is not None
    assert parse_net(patched, upgrade=False) == new
    return patched, new


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    """The lines removed from ``before`` and the lines added in ``after``."""
    removed, added = [], []
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


def test_a_changed_value_rewrites_its_token_only():
    text = LENET.read_text()
    after, _ = edited(text, lambda n: setattr(n.layer[2].convolution_param, "num_output", 16))
    assert changed_lines(text, after) == (["    num_output: 20"], ["    num_output: 16"])


def test_a_new_field_goes_in_caffes_order_at_its_siblings_indent():
    text = LENET.read_text()
    after, _ = edited(text, lambda n: n.layer[2].convolution_param.pad.append(2))
    assert after == text.replace("num_output: 20\n", "num_output: 20\n    pad: 2\n", 1)


def test_a_new_element_follows_its_siblings_in_their_one_line_style():
    text = LENET.read_text()
    after, _ = edited(text, lambda n: n.layer[2].param.add(lr_mult=3))
    assert after == text.replace(
        "param { lr_mult: 2 }\n", "param { lr_mult: 2 }\n  param { lr_mult: 3 }\n", 1
    )


def test_a_field_inside_a_one_line_block_is_added_and_removed_there():
    text = LENET.read_text()
    after, _ = edited(text, lambda n: setattr(n.layer[2].param[0], "decay_mult", 0))
    assert changed_lines(text, after) == (
        ["  param { lr_mult: 1 }"],
        ["  param { lr_mult: 1 decay_mult: 0 }"],
    )
    again, _ = edited(text, lambda n: n.layer[3].pooling_param.ClearField("kernel_size"))
    assert changed_lines(text, again)[1] == ["  pooling_param { pool: MAX stride: 2 }"]


def test_a_removed_field_takes_its_line_and_the_comment_on_it():
    text = LENET.read_text()
    after, _ = edited(text, lambda n: n.layer[7].ClearField("top"))
    assert changed_lines(text, after) == (['  top: "ip1"  # in place: no extra blob'], [])


def test_a_new_layer_is_one_block_in_the_files_style():
    text = LENET.read_text()

    def add(net):
        layer = net.layer.add(name="pool3", type="Pooling", bottom=["ip2"], top=["pool3"])
        layer.pooling_param.kernel_size = 2
        conv = net.layer.add(name="conv3", type="Convolution", bottom=["pool3"], top=["conv3"])
        conv.param.add(lr_mult=1)
        conv.convolution_param.num_output = 4
        conv.convolution_param.weight_filler.type = "xavier"

    after, _ = edited(text, add)
    assert after.startswith(text)  # appended after the last layer; nothing before it moves
    assert after[len(text) :] == (
        'layer {\n  name: "pool3"\n  type: "Pooling"\n  bottom: "ip2"\n  top: "pool3"\n'
        "  pooling_param { kernel_size: 2 }\n}\n"
        'layer {\n  name: "conv3"\n  type: "Convolution"\n  bottom: "pool3"\n  top: "conv3"\n'
        "  param { lr_mult: 1 }\n  convolution_param {\n    num_output: 4\n"
        '    weight_filler { type: "xavier" }\n  }\n}\n'
    )


def test_a_moved_layer_keeps_its_text_verbatim():
    text = LENET.read_text()

    def move(net):
        relu = caffe_pb2.LayerParameter()
        relu.CopyFrom(net.layer[7])
        del net.layer[7]
        net.layer.insert(2, relu)

    after, _ = edited(text, move)
    removed, added = changed_lines(text, after)
    assert sorted(removed) == sorted(added) and '  top: "ip1"  # in place: no extra blob' in added
    assert after.count("#") == text.count("#")


RELU = 'layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }  # in place'
STYLED_EDITS = [
    (
        lambda n: setattr(n.layer[1].convolution_param, "num_output", 16),
        ["\t\tnum_output: 8"],
        ["\t\tnum_output: 16"],
    ),
    (lambda n: n.layer[1].convolution_param.pad.append(1), [], ["\t\tpad: 1"]),
    (lambda n: n.layer[1].bottom.append("x"), ['\tbottom: ["data"]'], ['\tbottom: ["data", "x"]']),
    (
        lambda n: setattr(n.layer[1], "type", "Deconvolution"),
        ['\tname: "conv";  type: "Convolution"'],
        ['\tname: "conv";  type: "Deconvolution"'],
    ),
    (lambda n: n.layer[2].bottom.append("data"), [RELU], [RELU.replace("top:", 'bottom: "data" top:')]),
    (lambda n: n.layer[1].convolution_param.ClearField("kernel_size"), ["\t\tkernel_size: 3  # 3x3"], []),
    (
        lambda n: n.layer[0].input_param.shape[0].dim.__setitem__(1, 1),
        ["\tinput_param { shape { dim: 1 dim: 3 dim: 8 dim: 8 } }"],
        ["\tinput_param { shape { dim: 1 dim: 1 dim: 8 dim: 8 } }"],
    ),
]


@pytest.mark.parametrize("edit, removed, added", STYLED_EDITS)
def test_other_styles_are_followed(edit, removed, added):
    after, _ = edited(STYLED, edit)
    assert changed_lines(STYLED, after) == (removed, added)


def test_windows_line_ends_stay():
    text = LENET.read_text().replace("\n", "\r\n")
    after, _ = edited(text, lambda n: n.layer[2].convolution_param.pad.append(2))
    assert after == text.replace("num_output: 20\r\n", "num_output: 20\r\n    pad: 2\r\n", 1)


def test_a_solver_is_patched_too():
    text = '# my solver\nnet: "n.prototxt"\nbase_lr: 0.01  # small\nmax_iter: 100\n'
    old = parse_solver(text, upgrade=False)
    new = caffe_pb2.SolverParameter()
    new.CopyFrom(old)
    new.base_lr, new.momentum = 0.05, 0.9
    new.ClearField("max_iter")
    assert (
        patch_text(text, old, new)
        == '# my solver\nnet: "n.prototxt"\nbase_lr: 0.05  # small\nmomentum: 0.9\n'
    )


def test_text_it_does_not_follow_gives_none():
    text = 'name: "n"\nlayer { name: "a" type: "ReLU" param: [{ lr_mult: 1 }, { lr_mult: 2 }] }\n'
    old = parse_net(text, upgrade=False)
    new = caffe_pb2.NetParameter()
    new.CopyFrom(old)
    new.layer[0].param[0].lr_mult = 3
    assert patch_text(text, old, new) is None  # a list of messages: the caller renders instead
    new.CopyFrom(old)
    new.name = "m"  # the same text, an edit away from the list: patched
    assert patch_text(text, old, new) == text.replace('"n"', '"m"')
