"""The one-line verdict on a variant of an initialisation experiment: did it learn?

The rule, from what the run recorded:

- a run whose loss became NaN or infinite **diverged**; one that raised otherwise (a filler
  refusing a blob's shape) **failed**; both say why;
- with a test accuracy (an Accuracy output of the test net), progress is how far the last score
  got from chance to 100%: ``p = (acc - chance) / (1 - chance)``, chance being top_k / classes.
  p >= 0.5: **learned** ("learned: 97.8% after 500 iterations"); 0.1 <= p < 0.5: **learned a
  little**; below: **did not learn** (with the loss: "did not learn: loss flat at 2.30, 11.4%
  after 300 iterations (chance 10.0%)");
- without one, the loss decides: ``r = end / start``, the mean of the last and of the first k
  losses (k = a tenth of the run, 1 to 10). r <= 0.5: learned; r <= 0.9: learned a little; else
  did not learn ("loss flat at 2.30" when it moved less than 10%, else "loss rose from A to B").

"Beat chance" is the first tested iteration whose score reached p >= 0.1. A run stopped before the
iterations planned is judged on those it reached, and says so: "... (stopped at iteration 40 of 300)".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

LEARNED, A_LITTLE, NOT = "learned", "learned a little", "did not learn"
DIVERGED, FAILED = "diverged", "failed"
GOOD, SOME = 0.5, 0.1  # progress from chance towards 100% (or fall of the loss) for each word


@dataclass(frozen=True)
class Verdict:
    word: str  # LEARNED, A_LITTLE, NOT, DIVERGED or FAILED
    text: str  # the line shown: "learned: 97.8% after 500 iterations"
    final_loss: float
    best_accuracy: float  # NaN without a test accuracy
    beat_chance_at: int | None  # the first tested iteration at p >= 0.1


def progress(accuracy: float, chance: float) -> float:
    """How far ``accuracy`` is from chance (0) to perfect (1)."""
    return (accuracy - chance) / (1 - chance) if chance < 1 else 0.0


def ends(losses: Sequence[float]) -> tuple[float, float]:
    """The mean of the first and of the last k losses, k a tenth of the run (1 to 10)."""
    k = max(1, min(10, len(losses) // 10))
    return sum(losses[:k]) / k, sum(losses[-k:]) / k


def judge(
    losses: Sequence[float],
    tests: Sequence[tuple[int, float]],
    chance: float | None,
    iterations: int,
    error: str | None = None,
    diverged: bool = False,
    planned: int | None = None,
) -> Verdict:
    """``tests``: (iteration, accuracy) in order; ``chance`` None when the net has no accuracy;
    ``error``, why the run ended early (``diverged``: its loss was not finite); ``planned``, the
    iterations asked for (more than ``iterations``: the run was stopped)."""
    verdict = _judge(losses, tests, chance, iterations, error, diverged)
    if error or planned is None or iterations >= planned:
        return verdict
    said = f"{verdict.text} (stopped at iteration {iterations} of {planned})"
    return Verdict(verdict.word, said, verdict.final_loss, verdict.best_accuracy, verdict.beat_chance_at)


def _judge(
    losses: Sequence[float],
    tests: Sequence[tuple[int, float]],
    chance: float | None,
    iterations: int,
    error: str | None,
    diverged: bool,
) -> Verdict:
    final = losses[-1] if losses else math.nan
    scores = [a for _, a in tests]
    best = max(scores) if scores else math.nan
    beat = None
    if chance is not None:
        beat = next((it for it, a in tests if progress(a, chance) >= SOME), None)
    if error:
        word = DIVERGED if diverged else FAILED
        return Verdict(word, f"{word}: {error}", final, best, beat)
    if not losses:
        return Verdict(NOT, "did not learn: no iteration ran", final, best, beat)
    after = f"after {iterations} iteration{'s' if iterations != 1 else ''}"
    if chance is not None and scores:
        p, last = progress(scores[-1], chance), scores[-1]
        if p >= GOOD:
            return Verdict(LEARNED, f"{LEARNED}: {last:.1%} {after}", final, best, beat)
        said = f"{last:.1%} {after} (chance {chance:.1%})"
        if p >= SOME:
            return Verdict(A_LITTLE, f"{A_LITTLE}: {said}", final, best, beat)
        return Verdict(NOT, f"{NOT}: {_loss_words(losses)}, {said}", final, best, beat)
    start, end = ends(losses)
    ratio = end / start if start > 0 else math.inf
    if ratio <= GOOD:
        return Verdict(LEARNED, f"{LEARNED}: loss {start:.3g} -> {end:.3g} {after}", final, best, beat)
    if ratio <= 1 - SOME:
        return Verdict(A_LITTLE, f"{A_LITTLE}: loss {start:.3g} -> {end:.3g} {after}", final, best, beat)
    return Verdict(NOT, f"{NOT}: {_loss_words(losses)} {after}", final, best, beat)


def _loss_words(losses: Sequence[float]) -> str:
    start, end = ends(losses)
    if abs(end - start) <= SOME * abs(start):
        return f"loss flat at {end:.2f}"
    return f"loss {'rose' if end > start else 'fell'} from {start:.3g} to {end:.3g}"
