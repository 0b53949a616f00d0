"""The inspector's line about a layer's trained weights: what a model opened with the net holds for it."""

from __future__ import annotations

import os

import numpy as np


def trained_text(blobs: list[np.ndarray], source: str | None) -> str:
    """'Trained (lenet.caffemodel): 20×1×5×5 σ 0.0831 · 20 σ 0.0123' for the layer's blobs."""
    parts = []
    for blob in blobs:
        shape = "×".join(map(str, blob.shape)) or "scalar"
        finite = blob[np.isfinite(blob)]
        spread = f" σ {float(finite.std()):.3g}" if finite.size else ""
        parts.append(f"{shape}{spread}")
    where = f" ({os.path.basename(source)})" if source else ""
    return f"Trained{where}: {' · '.join(parts)}"
