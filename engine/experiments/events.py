"""What an initialisation experiment reports, as typed events (the style of engine/events.py).

The experiment as a whole reports engine.events' Started, Paused, Resumed, Finished and Failed;
each variant reports its solver's Iteration and Tested wrapped with the variant's index, its
per-layer statistics and, at the end, its verdict. Plain frozen dataclasses: a listener may keep
them and hand them to another thread. No Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine import events
from engine.experiments.verdict import Verdict


@dataclass(frozen=True)
class Ready:
    """Every variant's solver is built: the variants' names and the layers the statistics cover."""

    variants: tuple[str, ...]
    layers: tuple[str, ...]
    relu: tuple[bool, ...]  # which layers' outputs are a ReLU's (a dead fraction is reported)
    iterations: int


@dataclass(frozen=True)
class Step:
    """An iteration of one variant: its loss, the loss smoothed over the solver's average_loss."""

    variant: int
    iteration: events.Iteration


@dataclass(frozen=True)
class Scored:
    variant: int
    tested: events.Tested


@dataclass(frozen=True)
class Stats:
    """One variant's per-layer numbers at ``iter`` (one per layer of Ready.layers)."""

    variant: int
    iter: int
    act_std: tuple[float, ...]
    grad_norm: tuple[float, ...]
    dead: tuple[float, ...]


@dataclass(frozen=True)
class VariantFailed:
    variant: int
    message: str


@dataclass(frozen=True)
class Judged:
    variant: int
    verdict: Verdict


Event = Ready | Step | Scored | Stats | VariantFailed | Judged | events.Event
