"""pycaffe's ``forward_all`` and ``forward_backward_all``: any number of inputs, in net-sized batches.

The last batch is padded with zeros and the padding cut off the results, as pycaffe.py does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

import numpy as np


class _Shaped(Protocol):
    @property
    def shape(self) -> tuple[int, ...]: ...


class BatchedNet(Protocol):
    """What batching needs of a pycaffe Net."""

    @property
    def inputs(self) -> list[str]: ...

    @property
    def outputs(self) -> list[str]: ...

    @property
    def blobs(self) -> Mapping[str, _Shaped]: ...

    def forward(self, blobs: Iterable[str] | None = None, **kwargs: Any) -> dict[str, np.ndarray]: ...

    def backward(self, diffs: Iterable[str] | None = None, **kwargs: Any) -> dict[str, np.ndarray]: ...


def forward_all(
    net: BatchedNet, blobs: Iterable[str] | None, arrays: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Forward any number of inputs in batches; returns the outputs of all of them."""
    wanted = list(blobs or [])
    collected: dict[str, list[np.ndarray]] = {out: [] for out in set(net.outputs + wanted)}
    for batch in _batches(net, arrays):
        for out, values in net.forward(blobs=wanted, **batch).items():
            collected[out].extend(values.copy())
    return _unpad(collected, arrays)


def forward_backward_all(
    net: BatchedNet,
    blobs: Iterable[str] | None,
    diffs: Iterable[str] | None,
    arrays: dict[str, np.ndarray],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Forward and backward any number of inputs/top diffs in batches."""
    wanted, wanted_diffs = list(blobs or []), list(diffs or [])
    outs: dict[str, list[np.ndarray]] = {out: [] for out in set(net.outputs + wanted)}
    grads: dict[str, list[np.ndarray]] = {d: [] for d in set(net.inputs + wanted_diffs)}
    forward_batches = _batches(net, {k: v for k, v in arrays.items() if k in net.inputs})
    backward_batches = _batches(net, {k: v for k, v in arrays.items() if k in net.outputs})
    for fb, bb in zip(forward_batches, backward_batches):
        for out, values in net.forward(blobs=wanted, **fb).items():
            outs[out].extend(values.copy())
        for d, values in net.backward(diffs=wanted_diffs, **bb).items():
            grads[d].extend(values.copy())
    return _unpad(outs, arrays), _unpad(grads, arrays)


def _unpad(collected: dict[str, list[np.ndarray]], arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {name: np.asarray(values) for name, values in collected.items()}
    if arrays:
        total = len(next(iter(arrays.values())))
        out = {name: values[:total] for name, values in out.items()}
    return out


def _batches(net: BatchedNet, arrays: dict[str, np.ndarray]) -> Iterator[dict[str, Any]]:
    """Split arrays into net-sized batches, padding the last one with zeros."""
    if not arrays:
        yield {}
        return
    num = len(next(iter(arrays.values())))
    batch_size = next(iter(net.blobs.values())).shape[0]
    remainder = num % batch_size
    for b in range(num // batch_size):
        i = b * batch_size
        yield {name: arrays[name][i : i + batch_size] for name in arrays}
    if remainder > 0:
        padded = {}
        for name in arrays:
            pad_shape = (batch_size - remainder, *arrays[name].shape[1:])
            padded[name] = np.concatenate([arrays[name][-remainder:], np.zeros(pad_shape)])
        yield padded
