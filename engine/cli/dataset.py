"""`main.py dataset FOLDER OUT_DIR [...]`: a data set from class folders, as DIGITS makes one, with a
progress bar and a summary; bad input is one line and exit 2, and nothing is left half-made."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.cli.common import CliError
from engine.cli.dataset_args import parse_size
from engine.cli.progress_bar import ProgressBar
from engine.data.dataset_builder import build_dataset
from engine.data.dataset_plan import DatasetOptions, plan_dataset, replace_problem
from engine.data.staging import check_target


def options_from(args: argparse.Namespace) -> DatasetOptions:
    try:
        size = parse_size(args.size)
    except argparse.ArgumentTypeError as exc:
        raise CliError(str(exc)) from None
    return DatasetOptions(
        size=size, resize=args.resize, gray=args.gray, val_pct=args.val, test_pct=args.test,
        val_folder=Path(args.val_folder) if args.val_folder else None, min_per_class=args.min_per_class,
        max_per_class=args.max_per_class, encoding=args.encoding, seed=args.seed,
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    out_dir = Path(args.out_dir)
    check_target(out_dir, args.force, "the data set folder")  # before scanning a big folder
    if args.force and (out_dir.exists() or out_dir.is_symlink()):
        problem = replace_problem(
            out_dir, Path(args.folder), " (--force replaces only a data set, or an empty folder)"
        )
        if problem:
            raise CliError(problem)
    plan = plan_dataset(Path(args.folder), options_from(args))
    counts = plan.counts()
    h, w = plan.size
    splits = ", ".join(f"{name} {sum(c)}" for name, c in counts.items() if sum(c))
    shape = f"{h}x{w}x{plan.channels} ({plan.options.resize})"
    print(f"{len(plan.labels)} classes, {plan.total} images -> {shape}; {splits}", file=sys.stderr)
    for name, n in plan.dropped.items():
        minimum = plan.options.min_per_class
        print(f"class {name} dropped: {n} image(s), fewer than --min-per-class {minimum}", file=sys.stderr)
    bar = None if args.quiet else ProgressBar("writing")
    summary = build_dataset(plan, out_dir, args.force, bar)
    for item in summary["skipped"]:
        print(f"skipped {item['reason']}", file=sys.stderr)
    written = ", ".join(f"{name}_lmdb {sum(c.values())}" for name, c in summary["counts"].items())
    classes, skipped = len(plan.labels), len(summary["skipped"])
    print(f"wrote {out_dir}: {written}, mean.binaryproto, labels.txt ({classes} classes), {skipped} skipped")
    return 0
