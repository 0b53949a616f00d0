"""`main.py convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME` and `main.py compute_image_mean
[FLAGS] INPUT_DB [OUTPUT_FILE]`: Caffe's tools, with its flags (read as gflags reads them), its log
lines on stderr, its files. Where Caffe aborts, one line and exit 2, and nothing is left behind."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from engine.cli import gflags_args, glog
from engine.cli.common import CliError

CONVERT_USAGE = """Convert a set of images to the leveldb/lmdb
format used as input for Caffe.
Usage:
    convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME
Flags: --gray --shuffle --backend=lmdb --resize_width=N --resize_height=N --check_size
       --encoded --encode_type=png|jpg"""

MEAN_USAGE = """Compute the mean_image of a set of images given by a leveldb/lmdb
Usage:
    compute_image_mean [FLAGS] INPUT_DB [OUTPUT_FILE]
Flags: --backend=lmdb"""

_CONVERT_BOOLS = ("gray", "shuffle", "check_size", "encoded")
_CONVERT_VALUES = {"backend": str, "resize_width": int, "resize_height": int, "encode_type": str}


def _wants_help(argv: Sequence[str], usage: str) -> bool:
    if any(arg in ("-h", "--help", "-help") for arg in argv):
        print(usage)
        return True
    return False


def _check_backend(flags: dict[str, object]) -> None:
    backend = str(flags.get("backend", "lmdb"))
    if backend.lower() != "lmdb":
        raise CliError(f"--backend {backend}: only lmdb is supported here (LevelDB is not)")


def run_convert(argv: Sequence[str]) -> int:
    from engine.data.imageset import ImagesetOptions, convert_imageset

    if _wants_help(argv, CONVERT_USAGE):
        return 0
    flags, words = gflags_args.parse(argv, _CONVERT_BOOLS, _CONVERT_VALUES)
    if len(words) != 3:
        raise CliError(
            f"convert_imageset takes ROOTFOLDER/ LISTFILE DB_NAME (got {len(words)} words); see --help"
        )
    _check_backend(flags)
    options = ImagesetOptions(
        gray=bool(flags.get("gray", False)),
        shuffle=bool(flags.get("shuffle", False)),
        resize_height=max(0, int(flags.get("resize_height", 0))),  # type: ignore[call-overload]
        resize_width=max(0, int(flags.get("resize_width", 0))),  # type: ignore[call-overload]
        check_size=bool(flags.get("check_size", False)),
        encoded=bool(flags.get("encoded", False)),
        encode_type=str(flags.get("encode_type", "")),
    )
    root, listfile, db = words

    def log(level: str, message: str) -> None:
        glog.emit(message, level, "io.cpp:80" if level == "E" else "convert_imageset.cpp:0")

    summary = convert_imageset(root, Path(listfile), Path(db), options, log)
    if summary.skipped:
        print(f"{len(summary.skipped)} image(s) skipped (named above)", file=sys.stderr)
    return 0


def run_mean(argv: Sequence[str]) -> int:
    from engine.data.image_mean import channel_means, compute_image_mean
    from proto.binaryio import write_blob

    if _wants_help(argv, MEAN_USAGE):
        return 0
    flags, words = gflags_args.parse(argv, (), {"backend": str})
    if len(words) not in (1, 2):
        raise CliError(
            f"compute_image_mean takes INPUT_DB [OUTPUT_FILE] (got {len(words)} words); see --help"
        )
    _check_backend(flags)
    say = glog.printer("compute_image_mean.cpp:0")
    blob = compute_image_mean(Path(words[0]), say)
    if len(words) == 2:
        say(f"Write to {words[1]}")
        write_blob(words[1], blob)
    say(f"Number of channels: {blob.channels}")
    for c, value in enumerate(channel_means(blob)):
        say(f"mean_value channel [{c}]:{value:g}")
    return 0


COMMANDS = {"convert_imageset": run_convert, "compute_image_mean": run_mean}


def main(command: str, argv: Sequence[str]) -> int:
    """Run a tool; bad input and Caffe's aborts are one line on stderr and exit 2."""
    from engine.errors import EngineError
    from proto.errors import FormatError

    try:
        return COMMANDS[command](argv)
    except (EngineError, FormatError, OSError) as exc:
        print(f"error: {command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
