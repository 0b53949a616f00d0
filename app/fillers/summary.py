"""What the preview shows about one drawn blob: histogram, theory, statistics, kernel images, traps.

Qt-free and run off the GUI thread (a blob may hold tens of millions of values). The histogram is
a density (it integrates to 1) so the filler's theoretical density can be drawn over it; a filler
putting a mass on one value (constant, the zeros of a sparse gaussian) gets a spike instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from app.fillers.traps import traps
from engine.fillers import expected_stats
from proto import caffe_pb2

BINS = 80
MAX_HISTOGRAM = 4_000_000  # more values than this: histogram every k-th (statistics use them all)
MOSAIC_FILTERS, MOSAIC_CHANNELS = 16, 16


@dataclass
class Preview:
    role: str
    filler: caffe_pb2.FillerParameter
    values: np.ndarray  # the blob exactly as drawn
    mean: float
    std: float
    expected: dict[str, float] | None
    edges: np.ndarray  # histogram bin edges; ``density`` has one value per bin
    density: np.ndarray
    theory: tuple[np.ndarray, np.ndarray] | None = None  # (x, density) of the filler's law
    spikes: list[tuple[float, float]] = field(default_factory=list)  # (value, probability mass)
    kernel: np.ndarray | None = None  # bilinear: the one (K, K) kernel every slice holds
    mosaic: np.ndarray | None = None  # convolution weights: kernels tiled, NaN between tiles
    mosaic_caption: str = ""
    warnings: list[str] = field(default_factory=list)


def summarise(values: np.ndarray, filler: caffe_pb2.FillerParameter, layer_type: str, role: str) -> Preview:
    shape = tuple(values.shape)
    flat = values.reshape(-1).astype(np.float64) if values.size else np.zeros(0)
    try:
        expected = expected_stats(filler, shape)
    except Exception:  # a filler the engine refuses: the build would have failed first
        expected = None
    edges, density = histogram(flat)
    preview = Preview(
        role,
        filler,
        values,
        float(flat.mean()) if flat.size else math.nan,
        float(flat.std()) if flat.size else math.nan,
        expected,
        edges,
        density,
    )
    preview.theory, preview.spikes = theory(filler, shape, edges)
    if filler.type == "bilinear" and len(shape) == 4 and values.size:
        preview.kernel = values[0, 0].astype(np.float64)  # every (num, channel) slice holds the same
    elif role == "weights" and len(shape) == 4 and shape[2] * shape[3] > 1:
        preview.mosaic, preview.mosaic_caption = mosaic(values)
    preview.warnings = traps(layer_type, role, filler, shape)
    return preview


def histogram(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if not flat.size:
        return np.array([0.0, 1.0]), np.zeros(1)
    step = max(1, flat.size // MAX_HISTOGRAM)
    sample = flat[::step]
    lo, hi = float(sample.min()), float(sample.max())
    bins = int(np.clip(2 * sample.size ** (1 / 3), 10, BINS))  # Rice's rule: a smooth outline for few values
    if hi - lo < 1e-12 * max(1.0, abs(lo)):  # one value: a thin bar centred on it
        half = max(abs(lo) * 0.05, 0.05)
        lo, hi, bins = lo - half, hi + half, 41
    counts, edges = np.histogram(sample, bins=bins, range=(lo, hi))
    return edges, counts / (sample.size * np.diff(edges))


def theory(
    filler: caffe_pb2.FillerParameter, shape: tuple[int, ...], edges: np.ndarray
) -> tuple[tuple[np.ndarray, np.ndarray] | None, list[tuple[float, float]]]:
    """The density of the filler's law over the histogram's range, and its point masses."""
    kind = filler.type
    try:
        stats = expected_stats(filler, shape)
    except Exception:
        return None, []
    x = np.linspace(edges[0], edges[-1], 400)
    if kind == "constant":
        return None, [(filler.value, 1.0)]
    if kind in ("gaussian", "msra"):
        mean, std, keep = (filler.mean, filler.std, 1.0) if kind == "gaussian" else (0.0, stats["std"], 1.0)
        spikes = []
        if kind == "gaussian" and filler.sparse >= 0:
            keep = filler.sparse / shape[0]
            spikes = [(0.0, 1 - keep)] if keep < 1 else []
        pdf = keep * np.exp(-0.5 * ((x - mean) / std) ** 2) / (std * math.sqrt(2 * math.pi))
        return (x, pdf), spikes
    if kind in ("uniform", "xavier"):
        lo, hi = (
            (filler.min, filler.max) if kind == "uniform" else (-stats["std"] * 3**0.5, stats["std"] * 3**0.5)
        )
        if hi <= lo:
            return None, [(lo, 1.0)]
        return (np.array([lo, lo, hi, hi]), np.array([0.0, 1 / (hi - lo), 1 / (hi - lo), 0.0])), []
    return None, []  # bilinear (deterministic), positive_unitball (no simple closed form)


def mosaic(weights: np.ndarray) -> tuple[np.ndarray, str]:
    """Kernels as tiles: a block of input-channel tiles per output filter, blocks wrapped into rows."""
    out, channels, kh, kw = weights.shape
    cols = min(channels, MOSAIC_CHANNELS)
    filters = min(out, MOSAIC_FILTERS if cols > 1 else 4 * MOSAIC_FILTERS)  # one tile a filter: room for more
    per_row = math.ceil(math.sqrt(filters)) if cols == 1 else max(1, MOSAIC_CHANNELS // cols)
    some = f"{filters} of {out}" if filters < out else f"all {out}"
    if cols == 1:
        caption = f"{some} filters, one tile each"
    else:
        caption = (
            f"{some} filters, one block each; in a block, one tile per input channel"
            f" ({f'first {cols} of {channels}' if cols < channels else f'all {channels}'})"
        )
    blocks = [[weights[o, c] for c in range(cols)] for o in range(filters)]
    return _tile(blocks, per_row, kh, kw), caption


def _tile(blocks: list[list[np.ndarray]], per_row: int, kh: int, kw: int) -> np.ndarray:
    """Blocks of tiles, ``per_row`` blocks a row; 1 pixel between tiles, 3 between blocks (NaN)."""
    cols, gap = len(blocks[0]), 3 if len(blocks[0]) > 1 else 1
    block_w = cols * (kw + 1) - 1
    rows = math.ceil(len(blocks) / per_row)
    width = min(per_row, len(blocks)) * (block_w + gap) - gap
    image = np.full((rows * (kh + gap) - gap, width), np.nan)
    for i, tiles in enumerate(blocks):
        top, left = (i // per_row) * (kh + gap), (i % per_row) * (block_w + gap)
        for c, tile in enumerate(tiles):
            image[top : top + kh, left + c * (kw + 1) : left + c * (kw + 1) + kw] = tile
    return image
