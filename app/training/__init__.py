"""One-click training: a copy of the document trains in a worker thread; live curves, runs, weights."""

from app.training.dock import TrainingDock

__all__ = ["TrainingDock"]
