"""`main.py splits NET [--phase P]`: the net as Caffe builds it, after filtering and InsertSplits."""

from __future__ import annotations

import argparse
from typing import cast

from google.protobuf import text_format

from engine.cli.common import phase_value, read_net
from engine.insert_splits import insert_splits
from engine.netstate import filter_net
from proto import caffe_pb2


def built_net(param: caffe_pb2.NetParameter, phase: int) -> caffe_pb2.NetParameter:
    """Filter by the phase, insert splits, and give every layer the net's phase, as Net::Init does."""
    param.state.phase = cast(caffe_pb2.Phase, phase)
    split = insert_splits(filter_net(param))
    for layer in split.layer:
        if not layer.HasField("phase"):
            layer.phase = cast(caffe_pb2.Phase, phase)
    return split


def run(args: argparse.Namespace) -> int:
    param = read_net(args.net)
    print(text_format.MessageToString(built_net(param, phase_value(args.phase))), end="")
    return 0
