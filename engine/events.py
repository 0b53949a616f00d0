"""What a training run reports, as typed events, and the states a run goes through.

The solver reports ``Iteration``, ``Tested`` and ``Snapshotted`` to its listeners; the Trainer
(engine/trainer.py) adds ``Started``, ``Paused``, ``Resumed``, ``Finished`` and ``Failed``. Plain
frozen dataclasses: listeners may keep them and hand them to another thread. No Qt.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class RunStatus(enum.StrEnum):
    """Where a run stands. PAUSING and STOPPING: asked for, not yet reached between two iterations.

    Its value is the word the views show (and a run read from a log keeps).
    """

    STARTING = "starting"
    RUNNING = "running"
    PAUSING = "pausing"
    PAUSED = "paused"
    STOPPING = "stopping"
    FINISHED = "finished"
    STOPPED = "stopped"
    FAILED = "failed"

    @property
    def active(self) -> bool:
        """The run has not ended (its worker holds the solver)."""
        return self not in (RunStatus.FINISHED, RunStatus.STOPPED, RunStatus.FAILED)


@dataclass(frozen=True)
class Iteration:
    """One iteration done: its loss, the smoothed loss the log shows, and its learning rate."""

    iter: int
    loss: float
    smoothed_loss: float
    lr: float


@dataclass(frozen=True)
class Tested:
    """Test net ``net`` scored at ``iter``: each output's mean by name."""

    iter: int
    net: int
    scores: dict[str, float]


@dataclass(frozen=True)
class Snapshotted:
    iter: int
    model: str
    state: str


@dataclass(frozen=True)
class Started:
    iter: int
    max_iter: int


@dataclass(frozen=True)
class Paused:
    iter: int


@dataclass(frozen=True)
class Resumed:
    iter: int


@dataclass(frozen=True)
class Finished:
    """The run ended without error: FINISHED at max_iter, STOPPED on a stop request."""

    iter: int
    status: RunStatus
    seconds: float


@dataclass(frozen=True)
class Failed:
    message: str
    traceback: str = field(default="")


Event = Iteration | Tested | Snapshotted | Started | Paused | Resumed | Finished | Failed
