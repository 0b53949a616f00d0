"""``upgrade IN OUT``: rewrite a legacy net or solver in the current format.

Caffe's upgrade_net_proto_text, upgrade_net_proto_binary and upgrade_solver_proto_text in one
command. A binary caffemodel stays binary; a text file is a net or a solver, told apart by which
of the two parses it (or, when neither does, which one got further). OUT is written atomically,
so OUT may be IN. Exit status: 0 done (also when nothing needed upgrading); 1 written, but the
upgrade had problems (fields Caffe could not place, listed as warnings), as Caffe's tools return
``!success``; 2 bad usage or input, nothing written.
"""

from __future__ import annotations

import os
import re
import sys

from google.protobuf.message import Message

from proto import caffe_pb2
from proto.binaryio import parse_binary, write_caffemodel
from proto.errors import FormatError
from proto.inputs import check_size, open_regular
from proto.textio import decode_text, looks_binary, parse_text, write_net, write_solver
from proto.upgrade import upgrade_net, upgrade_solver

USAGE = "usage: upgrade IN OUT   (a legacy net .prototxt/.caffemodel or solver .prototxt)"

_TOP_NAME = re.compile(r"^\s*([A-Za-z_]\w*)\s*[:{<]", re.MULTILINE)


def run(args: list[str]) -> int:
    if args in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if len(args) != 2:
        print(USAGE, file=sys.stderr)
        return 2
    source, target = args
    try:
        with open_regular(source, "binary", "a net, a solver or a caffemodel") as f:
            data = f.read(8192)
            if not looks_binary(data):  # text: held to a prototxt's limit before the rest is read
                check_size(source, os.fstat(f.fileno()).st_size, "text", "a prototxt")
            data += f.read()
        if looks_binary(data):
            steps, problems = _upgrade_caffemodel(data, source, target)
            kind = "binary net"
        else:
            kind, message = _parse_net_or_solver(decode_text(data, source), source)
            steps, problems = _upgrade_text(kind, message, source, target)
    except FormatError as e:
        print(e, file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{e.filename or source}: {e.strerror or e}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"warning: {source}: {problem}", file=sys.stderr)
    if steps:
        print(f"Upgraded {kind} {source} -> {target}:")
        for step in steps:
            print(f"  {step}")
    else:
        print(f"{source} is already in the latest {kind} format; wrote {target}")
    return 1 if problems else 0


def _upgrade_caffemodel(data: bytes, source: str, target: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    result = upgrade_net(parse_binary(data, caffe_pb2.NetParameter, source), source, copy=False)
    write_caffemodel(target, result.net)
    return result.steps, result.problems


def _upgrade_text(
    kind: str, message: Message, source: str, target: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if isinstance(message, caffe_pb2.NetParameter):
        result = upgrade_net(message, source, copy=False)
        write_net(target, result.net)
        return result.steps, result.problems
    assert isinstance(message, caffe_pb2.SolverParameter), kind
    solver = upgrade_solver(message, source)
    write_solver(target, solver.solver)
    return solver.steps, ()


def _parse_net_or_solver(text: str, source: str) -> tuple[str, Message]:
    candidates: list[tuple[str, type[Message]]] = [
        ("net", caffe_pb2.NetParameter),
        ("solver", caffe_pb2.SolverParameter),
    ]
    parsed: dict[str, Message] = {}
    errors: dict[str, FormatError] = {}
    for kind, message_type in candidates:
        try:
            parsed[kind] = parse_text(text, message_type, source)
        except FormatError as e:
            errors[kind] = e
    if len(parsed) == 1:
        return next(iter(parsed.items()))
    if len(parsed) == 2:
        raise FormatError(source, "neither a net nor a solver: it sets no field particular to either")
    # Both failed: the kind whose parse got further is what the file meant to be.
    net, solver = errors["net"], errors["solver"]
    net_at, solver_at = (net.line or 0, net.column or 0), (solver.line or 0, solver.column or 0)
    if net_at != solver_at:
        raise net if net_at > solver_at else solver
    names = set(_TOP_NAME.findall(text))
    net_score = len(names & set(caffe_pb2.NetParameter.DESCRIPTOR.fields_by_name))
    solver_score = len(names & set(caffe_pb2.SolverParameter.DESCRIPTOR.fields_by_name))
    raise solver if solver_score > net_score else net
