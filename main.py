"""Barista: design, inspect and train Caffe networks.

``python main.py`` opens the editor on the LeNet example; the subcommands mirror Caffe's tools
and run without a window. Bad input ends with one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

PHASES = ("TRAIN", "TEST")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="main.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("train", help="train a net from a solver, logging as Caffe does")
    p.add_argument("--solver", required=True)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--weights")
    group.add_argument("--snapshot")
    p.add_argument("--gpu", action="store_true")

    p = sub.add_parser("test", help="score a trained net on its TEST phase")
    p.add_argument("--model", required=True)
    p.add_argument("--weights", required=True)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--gpu", action="store_true")

    p = sub.add_parser("time", help="per-layer forward/backward timing")
    p.add_argument("--model", required=True)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--phase", choices=PHASES, default="TRAIN")
    p.add_argument("--gpu", action="store_true")

    sub.add_parser("device_query", help="which backends are usable")

    p = sub.add_parser("splits", help="print the net after phase filtering and InsertSplits")
    p.add_argument("net")
    p.add_argument("--phase", choices=PHASES, default="TRAIN")

    p = sub.add_parser("upgrade", help="rewrite a legacy net or solver in the current format")
    p.add_argument("input")
    p.add_argument("output")

    p = sub.add_parser("draw", help="render the net as the editor shows it")
    p.add_argument("net")
    p.add_argument("output")
    p.add_argument("--splits", action="store_true")
    p.add_argument("--phase", choices=PHASES, default="TRAIN")

    p = sub.add_parser("fill", help="write every parameter blob as its fillers initialise it")
    p.add_argument("--model", required=True)
    p.add_argument("--phase", choices=PHASES, default="TRAIN")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("output")
    return parser


def _not_yet(issue: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        print(f"error: `{args.command}` is not available yet ({issue})", file=sys.stderr)
        return 2

    return run


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    if name == "upgrade":
        from proto import cli_upgrade

        return lambda args: cli_upgrade.run([args.input, args.output])
    if name == "draw":
        from graph_view.cli_draw import run

        return run
    modules = {
        "splits": "splits",
        "time": "time",
        "device_query": "device_query",
        "fill": "fill",
        "train": "train",
        "test": "score",
    }
    if name in modules:
        import importlib

        return importlib.import_module(f"engine.cli.{modules[name]}").run
    return _not_yet("the graph editor issue")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command is None:
        from app.main_window import run_app

        return run_app()
    from engine.errors import EngineError
    from proto.errors import FormatError

    try:
        return _command(args.command)(args)
    except (EngineError, FormatError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
