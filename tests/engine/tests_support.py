"""Small helpers shared by the engine tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import numpy as np

GOLDEN_LAYER_CASES = [
    "accuracy_test",
    "batch_norm",
    "concat",
    "convolution",
    "deconvolution",
    "dropout_test",
    "eltwise_sum",
    "euclidean_loss",
    "inner_product",
    "lrn_across",
    "pooling_ave",
    "pooling_max",
    "relu",
    "sigmoid",
    "softmax",
    "softmax_with_loss",
    "tanh",
]


def close(got: np.ndarray, want: np.ndarray, rtol: float) -> bool:
    """The goldens' comparison: max error within rtol of the expected array's magnitude."""
    scale = max(float(np.abs(want).max()) if want.size else 0.0, 1e-3)
    return got.shape == want.shape and float(np.abs(got - want).max(initial=0.0)) <= rtol * scale
