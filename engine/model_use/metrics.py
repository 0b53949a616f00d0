"""Scores of a classifier on a labelled data set: top-1/top-5 accuracy, the confusion matrix,
per-class precision and recall, the most confident mistakes. Plain numpy. Qt-free."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Evaluation:
    names: list[str]  # each item: an image path, or an LMDB key
    labels: np.ndarray  # (N,) int: the true class
    probs: np.ndarray  # (N, C): the model's probabilities
    classes: list[str]  # C class names

    @property
    def count(self) -> int:
        return int(len(self.labels))

    @property
    def predicted(self) -> np.ndarray:
        return np.argmax(self.probs, axis=1) if self.count else np.zeros(0, int)

    def top_k_hits(self, k: int) -> int:
        """Items whose true class is among the k most probable (ties broken as Caffe's Accuracy
        layer does not: a class tied with the k-th counts only if it is ranked within k here)."""
        if not self.count:
            return 0
        k = min(k, self.probs.shape[1])
        best = np.argsort(-self.probs, axis=1, kind="stable")[:, :k]
        return int((best == self.labels[:, None]).any(axis=1).sum())

    def accuracy(self, k: int = 1) -> float:
        return self.top_k_hits(k) / self.count if self.count else 0.0

    def confusion(self) -> np.ndarray:
        """C x C counts: row = true class, column = predicted class."""
        size = len(self.classes)
        matrix = np.zeros((size, size), np.int64)
        np.add.at(matrix, (self.labels, self.predicted), 1)
        return matrix

    def precision_recall(self) -> tuple[np.ndarray, np.ndarray]:
        """Per class; NaN where a class was never predicted (precision) or has no items (recall)."""
        matrix = self.confusion().astype(np.float64)
        hits = np.diag(matrix)
        with np.errstate(invalid="ignore", divide="ignore"):
            return hits / matrix.sum(axis=0), hits / matrix.sum(axis=1)

    def mistakes(self, limit: int | None = None) -> list[int]:
        """Indices of the wrongly classified items, the most confident (predicted probability) first."""
        wrong = np.flatnonzero(self.predicted != self.labels)
        confidence = self.probs[wrong, self.predicted[wrong]]
        order = wrong[np.argsort(-confidence, kind="stable")]
        return [int(i) for i in order[:limit]]

    def items(self, true: int, predicted: int) -> list[int]:
        """The items of one cell of the confusion matrix."""
        return [int(i) for i in np.flatnonzero((self.labels == true) & (self.predicted == predicted))]


def matrix_csv(evaluation: Evaluation) -> str:
    """The confusion matrix as CSV: a header of predicted classes, one row per true class."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["true \\ predicted", *evaluation.classes])
    for name, row in zip(evaluation.classes, evaluation.confusion()):
        writer.writerow([name, *(int(v) for v in row)])
    return out.getvalue()


def per_class_csv(evaluation: Evaluation) -> str:
    """class, items, precision, recall (empty where undefined)."""
    import csv
    import io

    precision, recall = evaluation.precision_recall()
    counts = evaluation.confusion().sum(axis=1)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["class", "items", "precision", "recall"])
    for name, n, p, r in zip(evaluation.classes, counts, precision, recall):
        writer.writerow([name, int(n), "" if np.isnan(p) else f"{p:.6f}", "" if np.isnan(r) else f"{r:.6f}"])
    return out.getvalue()
