"""`main.py deploy TRAIN_VAL.prototxt OUT.prototxt [--input-shape N,C,H,W]`: the deploy net derived
from a train_val net (engine/model_use/deploy.py), written atomically, one line saying its inputs
and output."""

from __future__ import annotations

import argparse

from engine.cli import common
from engine.data_shapes import parse_shape
from engine.model_use import deploy
from proto import textio
from proto.atomic import write_text_atomic


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("deploy", help="derive the deploy net of a train_val net (Input, no losses, prob)")
    p.add_argument("net", metavar="TRAIN_VAL")
    p.add_argument("output", metavar="OUT")
    p.add_argument(
        "--input-shape", default="", metavar="N,C,H,W", help="the input's shape (default: batch 1)"
    )


def input_shape(text: str) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return parse_shape(text)
    except ValueError as exc:
        raise common.CliError(f"--input-shape: {exc}") from None


def run(args: argparse.Namespace) -> int:
    common.require_file(args.net, "TRAIN_VAL")
    param = common.read_net(args.net)
    try:
        result = deploy.derive(param, args.net, input_shape(args.input_shape), args.output)
    except deploy.DeployError as exc:
        raise common.CliError(f"{args.net}: {exc}") from None
    header = f"# Deploy net derived from {args.net} by main.py deploy.\n"
    write_text_atomic(args.output, header + textio.net_to_text(result.net))
    shapes = ", ".join(f"{name} {'x'.join(map(str, s))}" for name, s in result.inputs.items())
    print(f"wrote {args.output}: input {shapes or 'none'}, output {result.output or 'unchanged'}")
    for note in result.notes:
        print(f"note: {note}")
    return 0
