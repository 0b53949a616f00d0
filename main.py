"""Barista: design, inspect and train Caffe networks.

``python main.py`` opens the editor on the LeNet example, ``python main.py PATH [--weights W]`` on a
net, a solver or a trained model; the subcommands mirror Caffe's tools and run without a window.
Bad input ends with one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

PHASES = ("TRAIN", "TEST")
CAFFE_COMMANDS = ("train", "test", "time", "device_query")
# Caffe's flags that take a value (gflags reads them anywhere on the line, before the command too).
CAFFE_VALUE_FLAGS = (
    "solver", "weights", "snapshot", "gpu", "model", "phase", "level", "stage", "iterations",
    "sigint_effect", "sighup_effect",
)  # fmt: skip


class _Parser(argparse.ArgumentParser):
    """argparse that refuses bad input in one line (no usage block) with exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


def _int32(text: str) -> int:
    """An integer flag Caffe keeps in an int32 (``--level``, ``--iterations``): out of range is refused."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not -(2**31) <= value < 2**31:
        raise argparse.ArgumentTypeError(f"{text} is out of range (a 32-bit integer, as Caffe keeps it)")
    return value


def _flag(p: argparse.ArgumentParser, name: str, **kwargs: object) -> None:
    """A Caffe flag, spelt as gflags accepts it: -name, --name, -name=V or --name=V."""
    p.add_argument(f"--{name}", f"-{name}", dest=name, **kwargs)  # type: ignore[arg-type]


def _caffe_flags(p: argparse.ArgumentParser, command: str) -> None:
    """Every `caffe` command accepts every flag (gflags is global); each uses only its own."""
    _flag(p, "solver", default="", help="the solver definition (prototxt)")
    _flag(p, "model", default="", help="the model definition (prototxt)")
    _flag(p, "weights", default="", help="caffemodel(s) to start from, separated by ','")
    _flag(p, "snapshot", default="", help="a .solverstate to resume training from")
    _flag(
        p, "gpu", default="", nargs="?", const="0",
        help="GPU ids separated by ',' or 'all' (one GPU is used here); no value means 0",
    )  # fmt: skip
    _flag(p, "phase", default="", help="TRAIN or TEST (only `time` uses it; default TRAIN)")
    _flag(p, "level", type=_int32, default=0, help="the network level (default 0)")
    _flag(p, "stage", action="append", help="network stages, separated by ',' (repeatable)")
    _flag(p, "iterations", type=_int32, default=50, help="batches to run (default 50)")
    _flag(p, "sigint_effect", default="stop", help="on SIGINT: stop, snapshot or none (default stop)")
    _flag(p, "sighup_effect", default="snapshot", help="on SIGHUP: stop, snapshot or none (default snapshot)")


def _input_shape_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input-shape", action="append", metavar="BLOB=N,C,H,W",
        help="the shape to assume for a data blob whose source is absent (repeatable)",
    )  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="main.py",
        description=__doc__.split("\n\n")[0],
        epilog="Without a COMMAND, opens the editor on the LeNet example and its solver. "
        "`main.py COMMAND --help` lists a command's options.",
        allow_abbrev=False,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    helps = {
        "train": "train or finetune a model from a solver, logging as `caffe train` does",
        "test": "score a model on its TEST phase, as `caffe test` does",
        "time": "benchmark every layer's forward and backward, as `caffe time` does",
        "device_query": "which backends are usable; Caffe's GPU report for --gpu",
    }
    for command in CAFFE_COMMANDS:
        _caffe_flags(sub.add_parser(command, help=helps[command], allow_abbrev=False), command)

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
    _input_shape_flag(p)

    p = sub.add_parser("shapes", help="one line per layer: name, type, top shapes, params, FLOPs")
    p.add_argument("net")
    p.add_argument("--phase", choices=PHASES, default="TRAIN")
    p.add_argument("--splits", action="store_true")
    _input_shape_flag(p)

    p = sub.add_parser("fill", help="write every parameter blob as its fillers initialise it")
    p.add_argument("--model", required=True)
    p.add_argument("--phase", choices=PHASES, default="TRAIN")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("output", help="OUT.npz, OUT.caffemodel or OUT.caffemodel.h5 (the name says the format)")

    p = sub.add_parser("export", help="the net as ONNX or a PyTorch module, or a torchrun training package")
    p.add_argument("paths", nargs="*", metavar="PATH", help="NET OUT.onnx|OUT.py, or OUT_DIR")
    p.add_argument("--solver", default="", help="write a training package for this solver into OUT_DIR")
    p.add_argument("--weights", default="", help="a .caffemodel to export (default: the fillers')")
    p.add_argument("--phase", choices=PHASES, default="TEST")
    p.add_argument("--dynamic-batch", action="store_true", help="ONNX: leave the batch axis free")
    p.add_argument("--force", action="store_true", help="--solver: replace a package written there earlier")
    from engine.cli import model_use

    model_use.add_parsers(sub)
    from engine.cli.compare_init import add_arguments as compare_init_arguments

    compare_init_arguments(sub.add_parser("compare-init", help="train one net under several initialisations"))
    for name, subparser in sub.choices.items():  # every command that reads a prototxt
        if name != "device_query":
            subparser.add_argument(
                "--drop-unknown-fields", action="store_true",
                help="read prototxt without the fields BVLC Caffe's schema lacks (a fork's), saying which",
            )  # fmt: skip
    from engine.cli.dataset_args import add_dataset_commands

    add_dataset_commands(sub)  # convert_imageset, compute_image_mean (gflags, read by them), dataset
    return parser


def _command_first(argv: list[str]) -> list[str]:
    """gflags takes flags anywhere, so `caffe --solver=s.prototxt train` works: move the command word
    to the front when Caffe flags come before it."""
    if not argv or not argv[0].startswith("-") or argv[0] in ("-h", "--help"):
        return argv
    for i, word in enumerate(argv):
        if word not in CAFFE_COMMANDS:
            continue
        before = argv[i - 1] if i else ""
        takes_value = before.lstrip("-") in CAFFE_VALUE_FLAGS and "=" not in before
        if not takes_value:
            return [word, *argv[:i], *argv[i + 1 :]]
    return argv


def _check_caffe_flags(args: argparse.Namespace) -> str | None:
    if args.command == "time" and args.phase not in ("", *PHASES):
        return 'phase must be "TRAIN" or "TEST"'
    if args.command == "train":
        for flag in ("sigint_effect", "sighup_effect"):
            if getattr(args, flag) not in ("stop", "snapshot", "none"):
                return f'Invalid signal effect "{getattr(args, flag)}" was specified for --{flag}'
    return None


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    if name == "upgrade":
        from proto import cli_upgrade

        return lambda args: cli_upgrade.run([args.input, args.output])
    if name == "draw":
        from graph_view.cli_draw import run

        return run
    if name == "export":
        from engine.export.cli import run

        return run
    if name == "dataset":
        from engine.cli.dataset import run as run_dataset

        return run_dataset
    if name == "compare-init":
        from app.experiments.cli import run as compare_init  # the engine's, plus --out X.png

        return compare_init
    if name == "shapes":
        from graph_view.cli_shapes import run as run_shapes

        return run_shapes
    from engine.cli import model_use

    modules = {
        "splits": "splits",
        "time": "time",
        "device_query": "device_query",
        "fill": "fill",
        "train": "train",
        "test": "score",
        **{name: name for name in model_use.COMMANDS},  # engine/cli/<name>.py
    }
    import importlib

    return importlib.import_module(f"engine.cli.{modules[name]}").run


def _unknown_fields_policy(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """With --drop-unknown-fields, every prototxt read drops a fork's fields and says which."""
    if not getattr(args, "drop_unknown_fields", False):
        return contextlib.nullcontext()
    from proto import textio

    return textio.dropping_unknown_fields(lambda e: print(f"warning: {e.dropped_notice()}", file=sys.stderr))


def _command_names() -> set[str]:
    actions = _parser()._actions  # the subcommands' action is where argparse keeps their names
    return {name for a in actions if isinstance(a, argparse._SubParsersAction) for name in a.choices}


def _open_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="main.py", description="open the editor on a file", allow_abbrev=False)
    parser.add_argument("path", help="a net or solver prototxt, or a trained .caffemodel(.h5)")
    parser.add_argument("--weights", "-weights", default="", help="a .caffemodel to show and train from")
    return parser


def _open_app(argv: list[str]) -> int:
    """``main.py PATH [--weights W]``: the editor on PATH; a file that cannot be read is one line."""
    args = _open_parser().parse_args(argv)
    word = args.path
    if not os.path.exists(word) and os.sep not in word and "." not in word:  # a mistyped command?
        commands = ", ".join(sorted(_command_names()))
        print(f"error: '{word}' is neither a command ({commands}) nor a file", file=sys.stderr)
        return 2
    from app.cli_open import check, run

    problem = check(args.path, args.weights or None)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    return run(args.path, args.weights or None)


def _names_printable() -> None:
    """A file name that is not UTF-8 (its bytes kept as surrogates) prints as ``\\xff`` on stdout
    too, as Python already does on stderr, instead of a UnicodeEncodeError after the work is done."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "") == "strict":
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _names_printable()
    argv = _command_first(list(sys.argv[1:] if argv is None else argv))
    if argv and not argv[0].startswith("-") and argv[0] not in _command_names():
        return _open_app(argv)
    if argv and argv[0] in ("convert_imageset", "compute_image_mean"):  # Caffe's tools read gflags
        from engine.cli.imageset_tools import main as run_tool

        return run_tool(argv[0], argv[1:])
    args = _parser().parse_args(argv)
    if args.command is None:
        from app.main_window import run_app

        return run_app()
    if args.command in CAFFE_COMMANDS:
        problem = _check_caffe_flags(args)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        from engine.cli import glog

        glog.install()
    from engine.errors import EngineError
    from proto.errors import FormatError, UnknownFieldsError

    try:
        with _unknown_fields_policy(args):
            return _command(args.command)(args)
    except UnknownFieldsError as exc:
        print(f"error: {exc} (--drop-unknown-fields reads it without them)", file=sys.stderr)
        return 2
    except (EngineError, FormatError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
