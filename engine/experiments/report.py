"""An initialisation experiment's results as text: the summary table, JSON and CSV.

JSON: ``{"iterations", "seed", "batches_differ_at", "stopped_at" (null unless stopped), "layers",
"variants": [{"name", "filler", "verdict", "final_loss", "best_accuracy", "beat_chance_at", "iters",
"loss", "smoothed_loss", "tests": [{"iter", "scores"}], "stats": {"iters", "act_std", "grad_norm",
"dead"}}]}`` (NaN as null). CSV: one row per variant and iteration: ``variant, filler, iteration,
loss, smoothed_loss``, then ``test NAME`` for every test score (empty where the iteration was not
tested) and ``LAYER act_std``, ``LAYER grad_norm``, ``LAYER dead`` per layer (empty where not
measured); the final test after the last iteration is a row of its own, without a loss.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

from engine.experiments.compare_init import Curves


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def table(curves: Sequence[Curves]) -> str:
    """One line per variant: name, filler, final loss, best test accuracy, where it beat chance."""
    rows = [("variant", "filler", "final loss", "best test accuracy", "beat chance at")]
    for c in curves:
        v = c.verdict
        loss = f"{v.final_loss:.4g}" if v and math.isfinite(v.final_loss) else "-"
        best = f"{v.best_accuracy:.1%}" if v and math.isfinite(v.best_accuracy) else "-"
        beat = f"iteration {v.beat_chance_at}" if v and v.beat_chance_at is not None else "-"
        rows.append((c.name, c.spec, loss, best, beat))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def to_json(curves: Sequence[Curves], layers: Sequence[str], **facts: Any) -> str:
    """``facts``: the experiment's settings written first (iterations, seed, batches_differ_at)."""

    def variant(c: Curves) -> dict[str, Any]:
        v = c.verdict
        return {
            "name": c.name,
            "filler": c.spec,
            "verdict": v.text if v else None,
            "final_loss": _number(v.final_loss) if v else None,
            "best_accuracy": _number(v.best_accuracy) if v else None,
            "beat_chance_at": v.beat_chance_at if v else None,
            "error": c.error,
            "iters": c.iters,
            "loss": [_number(x) for x in c.loss],
            "smoothed_loss": [_number(x) for x in c.smoothed],
            "tests": [{"iter": it, "scores": {k: _number(x) for k, x in s.items()}} for it, s in c.tests],
            "stats": {
                "iters": c.stat_iters,
                **{
                    key: [[_number(x) for x in row] for row in getattr(c, key)]
                    for key in ("act_std", "grad_norm", "dead")
                },
            },
        }

    document = {**facts, "layers": list(layers), "variants": [variant(c) for c in curves]}
    return json.dumps(document, indent=1) + "\n"


def to_csv(curves: Sequence[Curves], layers: Sequence[str]) -> str:
    scores = list(dict.fromkeys(name for c in curves for _, s in c.tests for name in s))
    stats = [(layer, key) for layer in layers for key in ("act_std", "grad_norm", "dead")]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        ["variant", "filler", "iteration", "loss", "smoothed_loss"]
        + [f"test {name}" for name in scores]
        + [f"{layer} {key}" for layer, key in stats]
    )
    for c in curves:
        tested = dict(c.tests)
        measured = {it: i for i, it in enumerate(c.stat_iters)}
        losses = {it: (loss, smooth) for it, loss, smooth in zip(c.iters, c.loss, c.smoothed)}
        for it in sorted(set(losses) | set(tested)):
            loss, smooth = losses.get(it, (None, None))
            row: list[Any] = [c.name, c.spec, it, _cell(loss), _cell(smooth)]
            row += [_cell(tested[it].get(name)) if it in tested else "" for name in scores]
            if it in measured:
                i = measured[it]
                row += [_cell(getattr(c, key)[i][layers.index(layer)]) for layer, key in stats]
            else:
                row += [""] * len(stats)
            writer.writerow(row)
    return out.getvalue()


def _cell(value: float | None) -> str:
    if value is None:
        return ""
    return repr(float(value)) if math.isfinite(value) else ("nan" if math.isnan(value) else str(value))
