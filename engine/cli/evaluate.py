"""`main.py evaluate --model M --weights W [--data LMDB|LIST|FOLDER] [--labels L] [--csv M.csv]
[--mistakes K] [--batch-size B] [--resize H,W] [--gpu ID]`: top-1 and top-5 accuracy, per-class
precision and recall, the most confident mistakes, the confusion matrix as CSV
(engine/model_use/evaluate.py). Without --data, the TEST data layer of M is read. Progress goes to
stderr."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from engine import backend
from engine.cli import common
from engine.cli.train import bundled_data
from engine.model_use import classify, metrics
from engine.model_use import evaluate as scoring
from proto.atomic import write_text_atomic
from proto.textio import read_net


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="accuracy, confusion matrix, precision/recall on a labelled data set")
    p.add_argument("--model", required=True, help="a deploy or train_val net (default data: its TEST layer)")
    p.add_argument("--weights", required=True, help="the trained .caffemodel")
    p.add_argument("--data", default="", help="an LMDB, an image list or a folder of class folders")
    p.add_argument("--labels", default="", help="class names, one a line")
    p.add_argument("--csv", default="", help="write the confusion matrix here")
    p.add_argument("--mistakes", type=int, default=10, metavar="K", help="most confident mistakes shown")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--resize", default="", metavar="H,W", help="resize images to this before the crop")
    p.add_argument("--gpu", default="", metavar="ID", help="run on this GPU")


class Progress:
    """``Evaluated N/M`` on stderr: rewritten in place on a terminal, every tenth otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        if self.tty:
            end = "\n" if done >= total else ""
            print(f"\rEvaluated {done}/{total}", end=end, file=sys.stderr, flush=True)
            return
        tenth = done * 10 // max(total, 1)
        if tenth != self.shown:
            self.shown = tenth
            print(f"Evaluated {done}/{total}", file=sys.stderr, flush=True)


def report(result: metrics.Evaluation, mistakes: int) -> list[str]:
    n = result.count
    lines = [
        f"Top-1 accuracy: {result.accuracy(1):.4f} ({result.top_k_hits(1)}/{n})",
        f"Top-5 accuracy: {result.accuracy(5):.4f} ({result.top_k_hits(5)}/{n})",
    ]
    precision, recall = result.precision_recall()
    counts = result.confusion().sum(axis=1)
    width = max(8, *(len(c) for c in result.classes))
    lines.append(f"{'class':<{width}}  {'items':>6}  {'precision':>9}  {'recall':>6}")
    for name, count, p, r in zip(result.classes, counts, precision, recall):
        ps = "-" if np.isnan(p) else f"{p:.4f}"
        rs = "-" if np.isnan(r) else f"{r:.4f}"
        lines.append(f"{name:<{width}}  {int(count):>6}  {ps:>9}  {rs:>6}")
    wrong = result.mistakes(mistakes)
    if wrong:
        lines.append("Most confident mistakes:")
        predicted = result.predicted
        for i in wrong:
            guess = int(predicted[i])
            true = result.classes[result.labels[i]]
            confidence = result.probs[i, guess]
            lines.append(f"  {result.names[i]}: {result.classes[guess]} ({confidence:.4f}), is {true}")
    return lines


def run(args: argparse.Namespace) -> int:
    common.require_file(args.model, "--model")
    common.require_file(args.weights, "--weights")
    if args.batch_size < 1:
        raise common.CliError(f"--batch-size {args.batch_size}: must be at least 1")
    if args.csv:
        inputs = [args.model, args.weights, args.labels or "", args.data or ""]
        common.check_output(args.csv, "--csv", [p for p in inputs if p])
    size = None
    if args.resize:
        try:
            h, w = (int(v) for v in args.resize.split(","))
        except ValueError:
            raise common.CliError(f"--resize {args.resize}: expected H,W") from None
        size = (h, w)
    if args.gpu:
        common.set_device(int(args.gpu))
    else:
        backend.set_mode_cpu()
    say = lambda text: print(text, file=sys.stderr)  # noqa: E731
    evaluator = scoring.Evaluator(args.model, args.weights, args.batch_size)
    try:
        names = classify.read_labels(args.labels, evaluator.classes) if args.labels else None
        paths = scoring.default_paths(args.model)
        if not args.data:
            paths = bundled_data([read_net(args.model)], paths, say)
        data = scoring.open_data(evaluator, args.model, args.data or None, names, size, paths)
        print(f"Evaluating {data.describe()}", file=sys.stderr)
        warn = lambda text: print(f"skipped: {text}", file=sys.stderr)  # noqa: E731
        result = scoring.evaluate(
            evaluator, data, names, batch_size=args.batch_size, progress=Progress(), warn=warn
        )
    finally:
        evaluator.close()
    for line in report(result, args.mistakes):
        print(line)
    if args.csv:
        write_text_atomic(args.csv, metrics.matrix_csv(result))
        print(f"Confusion matrix written to {args.csv}")
    if result.count != data.count:  # the skip lines name them; one error line says so, last
        unread = data.count - result.count
        print(f"error: {unread} of {data.count} image(s) could not be read", file=sys.stderr)
        return 2
    return 0
