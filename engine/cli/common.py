"""What the engine's subcommands share: reading a net for a phase."""

from __future__ import annotations

from proto import caffe_pb2


def phase_value(name: str) -> int:
    return caffe_pb2.Phase.Value(name)


def read_net(path: str) -> caffe_pb2.NetParameter:
    from proto import textio

    return textio.read_net(path)
