"""`main.py compare-init --solver S [--variant NAME=FILLER ...] [--iterations N] [--seed S]
[--layers a,b] [--out results.json|csv|png]`: one net under several initialisations, side by side.

Each ``--variant`` is ``NAME=FILLER`` or just ``FILLER`` (then named by itself); FILLER is spelt as
engine/experiments/filler_spec.py reads it (``xavier``, ``constant 0``, ``gaussian std=0.01``,
``uniform min=-0.5 max=0.5``, ``type: "msra" variance_norm: AVERAGE``, ``as written``). Without
``--variant`` the five of DIGITS's weight-init example run. Prints a progress line at every test
(each variant's loss and test score), then a table and one verdict line per variant. Bad input
(an unknown filler or field, fewer than 2 or more than 6 variants, a layer the net lacks) is one
line and exit code 2. Ctrl-C (SIGINT) stops every variant after the current iteration, as it stops
``train``: the table, the verdicts (each on the iterations it reached) and ``--out`` follow, exit 0;
a second Ctrl-C ends it at once (exit 130).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

from engine import backend, events
from engine.experiments import events as exp

if TYPE_CHECKING:
    from engine.experiments.compare_init import CompareInit, Variant

Picture = Callable[["CompareInit", list[str], list[bool], str], None]

DIGITS_VARIANTS = ("constant 0", "uniform min=0 max=1", "uniform min=-0.5 max=0.5", "xavier", "msra")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--solver", required=True, help="the solver whose net is trained")
    p.add_argument(
        "--variant", action="append", default=[], metavar="NAME=FILLER",
        help="a filler for the weights, e.g. zero='constant 0', 'gaussian std=0.01', xavier (2-6 of them; "
        "default: DIGITS's five: constant 0, uniform [0,1], uniform [-0.5,0.5], xavier, msra)",
    )  # fmt: skip
    p.add_argument("--iterations", type=int, default=300, help="iterations per variant (default 300)")
    p.add_argument("--seed", type=int, default=1, help="the seed every variant's fillers draw from")
    p.add_argument("--layers", default="", help="fill only these layers' weights (comma-separated)")
    p.add_argument(
        "--out", default="", help="write the curves to this .json or .csv file, or as a .png picture"
    )
    p.add_argument("--test-interval", type=int, help="test every N iterations (default: the solver's, "
                   "at most a tenth of the run)")  # fmt: skip
    p.add_argument("--test-iter", type=int, help="test batches per test (default: the solver's, at most 10)")
    p.add_argument("--stats-every", type=int, default=1, help="per-layer statistics every N iterations")
    p.add_argument("--gpu", default="", metavar="ID", help="train the variants on this GPU")


def variant(text: str) -> Variant:
    """``NAME=FILLER`` when the text before the first '=' is one word, else the FILLER alone."""
    from engine.experiments.compare_init import Variant

    name, sep, spec = text.partition("=")
    if sep and name and " " not in name.strip() and ":" not in name:
        return Variant.parse(name.strip(), spec)
    return Variant.parse(" ".join(text.split()), text)


def run(args: argparse.Namespace, picture: Picture | None = None) -> int:
    """``picture(experiment, layers, relu, path)`` writes ``--out X.png`` (the window's curves: main.py
    passes it from app/, which the engine may not import)."""
    # The engine loads here, not when main.py builds its parser.
    from engine import pymodules
    from engine.cli import common
    from engine.cli.signals import SignalHandler
    from engine.cli.train import bundled_data, data_beside, read_solver, solver_nets
    from engine.experiments import report
    from engine.experiments.compare_init import MAX_VARIANTS, MIN_VARIANTS, CompareInit
    from proto.atomic import write_text_atomic

    kinds = (".json", ".csv", ".png") if picture is not None else (".json", ".csv")
    if args.out and os.path.splitext(args.out)[1].lower() not in kinds:
        raise common.CliError(f"--out {args.out}: give a {', a '.join(kinds[:-1])} or a {kinds[-1]} file")
    if args.out:
        common.check_output(args.out, "--out", [args.solver])
    variants = [variant(v) for v in args.variant or DIGITS_VARIANTS]
    if not MIN_VARIANTS <= len(variants) <= MAX_VARIANTS:  # before the solver is read: one line
        count = len(variants)
        raise common.CliError(f"give {MIN_VARIANTS} to {MAX_VARIANTS} variants to compare, not {count}")
    common.require_file(args.solver, "--solver")
    if args.gpu:
        common.set_device(common.parse_gpus(args.gpu)[0])
    else:
        backend.set_mode_cpu()
    param = read_solver(args.solver)
    nets = solver_nets(param)
    data_paths = bundled_data(nets, data_beside(param), lambda line: print(line, file=sys.stderr))
    layers = [name.strip() for name in args.layers.split(",") if name.strip()]
    progress = Progress(len(variants))
    experiment = CompareInit(
        param, variants, args.iterations, args.seed, layers, progress,
        test_interval=args.test_interval, test_iter=args.test_iter, stats_every=args.stats_every,
        data_paths=data_paths, xp=backend.array_module(),
    )  # fmt: skip
    files = [args.solver, param.net, param.train_net, *param.test_net]
    handler = SignalHandler("stop", None, repeat_aborts=True)
    experiment.action = handler.action
    with handler, pymodules.for_nets(files, nets), warnings.catch_warnings():
        # A diverging variant overflows in the engine's worker threads; its verdict says so, once.
        warnings.simplefilter("ignore", RuntimeWarning)
        curves = experiment.run()
    if progress.failed:
        raise common.CliError(progress.failed)
    if experiment.batches_differ_at is not None:
        print(
            f"warning: the variants' batches differ from iteration {experiment.batches_differ_at} "
            "(a data layer draws at random in a way the seed does not fix)",
            file=sys.stderr,
        )
    end = progress.finished
    stopped_at = end.iter if end is not None and end.status is events.RunStatus.STOPPED else None
    if stopped_at is not None:  # by Ctrl-C: what ran is reported and written, as `train` keeps it
        print(f"Optimization stopped early, at iteration {stopped_at} of {args.iterations}.")
    print(report.table(curves))
    for c in curves:
        print(f"{c.name}: {c.verdict.text if c.verdict else 'no verdict'}")
    if args.out:
        layer_names = list(progress.layers)
        if args.out.lower().endswith(".png") and picture is not None:
            picture(experiment, layer_names, list(progress.relu), args.out)
            print(f"wrote {args.out}")
            return 0
        if args.out.lower().endswith(".json"):
            differ = experiment.batches_differ_at
            text = report.to_json(
                curves, layer_names, iterations=args.iterations, seed=args.seed, batches_differ_at=differ,
                stopped_at=stopped_at,
            )  # fmt: skip
        else:
            text = report.to_csv(curves, layer_names)
        write_text_atomic(args.out, text)
        print(f"wrote {args.out}")
    return 0


class Progress:
    """Prints a line whenever every variant has been tested at an iteration: each one's smoothed loss
    at the iteration before and its test scores (the loss output aside)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.names: tuple[str, ...] = ()
        self.layers: tuple[str, ...] = ()
        self.relu: tuple[bool, ...] = ()
        self.losses: dict[tuple[int, int], float] = {}  # (variant, iteration): the smoothed loss
        self.scores: dict[int, dict[int, dict[str, float]]] = {}
        self.dropped: set[int] = set()
        self.failed = ""
        self.finished: events.Finished | None = None

    def __call__(self, event: exp.Event) -> None:
        if isinstance(event, exp.Ready):
            self.names, self.layers, self.relu = event.variants, event.layers, event.relu
        elif isinstance(event, exp.Step):
            self.losses[event.variant, event.iteration.iter] = event.iteration.smoothed_loss
        elif isinstance(event, exp.Scored):
            at = self.scores.setdefault(event.tested.iter, {})
            at[event.variant] = event.tested.scores
            if len(at) == self.count - len(self.dropped):
                self._line(event.tested.iter, self.scores.pop(event.tested.iter))
        elif isinstance(event, exp.VariantFailed):
            self.dropped.add(event.variant)
            print(f"{self.names[event.variant] if self.names else event.variant}: failed: {event.message}")
        elif isinstance(event, events.Failed):
            self.failed = event.message
        elif isinstance(event, events.Finished):
            self.finished = event

    def _line(self, iteration: int, scores: dict[int, dict[str, float]]) -> None:
        parts = []
        for k, name in enumerate(self.names):
            loss = self.losses.get((k, iteration - 1), math.nan)  # a test at N comes before iteration N
            score = next((f" {n} {v:.3g}" for n, v in scores.get(k, {}).items() if n != "loss"), "")
            parts.append(f"{name}: loss {loss:.3g}{score}" if math.isfinite(loss) else f"{name}:{score}")
        print(f"Iteration {iteration} | " + " | ".join(parts), flush=True)
