"""Pooling on the CPU over the frame's phase planes, a cache-sized block of images at a time.

A window's kernel offset (i, j) reads frame pixels (ph stride_h + i, pw stride_w + j): strided
views, which numpy walks value by value. Split into phases instead, one plane per (row mod
stride_h, column mod stride_w) that an offset reads, each ``wide`` = PW + (kw - 1) // stride_w
columns wide, and offset (i, j) reads, for all the outputs of an image channel, one contiguous run
of its phase plane: PH x wide values from (i // sh, j // sw), the last ``wide - PW`` columns of each
row beyond the windows (computed, then dropped). The frame's padding is a fill value in the planes.

MAX: Caffe keeps, from -FLT_MAX, each value strictly greater than the best so far, in raster order:
the first maximum of the window wins and NaN never does. So a tournament over the offsets in raster
order (-inf in the padding): ``best`` the running maximum, ``choice`` the offset that set it (int8,
or int16/int32 for windows of more than 127 / 32767 values).
Backward adds dy at each window's chosen pixel (flat indices: a table of the windows' first pixels
plus the offset's), in the outputs' raster order as Caffe's loop (``add.at``: overlapping windows sum).
AVE: the offsets' values summed in raster order (0 in the padding), over Caffe's divisor; backward
adds each window's share onto its pixels, offsets in reverse raster order, so that every pixel sums
its windows' shares in the outputs' raster order as Caffe's loop; then the planes go back to the image.
Ranges of images run on engine.parallel's threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from engine import backend, parallel

LOWEST = float(np.finfo(np.float32).min)  # Caffe's MAX pooling starts from -FLT_MAX
BLOCK_BYTES = 2 << 20  # a block's phase planes: read kh kw times while they stay in a core's cache
SCATTER_BYTES = 1 << 20  # a block of the bottom's diff that MAX's backward adds into


def phase_rows(phase: int, stride: int, pad: int, size: int, extent: int) -> tuple[slice, slice] | None:
    """Rows u of a phase plane (frame rows phase + u stride) that hold image rows, and those image rows."""
    first = max(0, -(-(pad - phase) // stride))
    stop = min(extent, (size - 1 + pad - phase) // stride + 1)
    if stop <= first:
        return None
    start = phase + first * stride - pad
    return slice(first, stop), slice(start, start + (stop - first - 1) * stride + 1, stride)


class Phases:
    """One pooling geometry's phase planes, for bottoms of one shape (N, C, H, W); ``pad`` places the
    image in the frame. ``runs``: for each kernel offset in raster order, its plane and the start of
    its run; ``block``: images per block."""

    def __init__(
        self, workspace: Any, kernel: Any, stride: Any, pooled: Any, shape: Any, dtype: Any, pad: Any
    ):
        n, c, height, width = shape
        (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pooled
        self.workspace, self.shape, self.dtype, self.pooled = workspace, tuple(shape), dtype, pooled
        self.wide = pw + (kw - 1) // sw
        self.tall = ph + (kh - 1) // sh + 1  # one more row: the last run may reach past the last row
        self.span = ph * self.wide
        self.phases = sorted({(i % sh, j % sw) for i in range(kh) for j in range(kw)})
        self.runs = [
            (self.phases.index((i % sh, j % sw)), (i // sh) * self.wide + j // sw)
            for i in range(kh)
            for j in range(kw)
        ]
        plane = self.tall * self.wide * np.dtype(dtype).itemsize
        self.block = max(1, BLOCK_BYTES // max(c * plane * len(self.phases), 1))
        self.copies = []  # (phase, plane rows, plane columns, image rows, image columns)
        for k, (a, b) in enumerate(self.phases):
            rows = phase_rows(a, sh, pad[0], height, self.tall)
            cols = phase_rows(b, sw, pad[1], width, self.wide)
            if rows is not None and cols is not None:
                self.copies.append((k, rows[0], cols[0], rows[1], cols[1]))
        self.layout = repr(self.copies)  # where split writes: the rest of the planes keep their fill

    def blocks(self, start: int, stop: int) -> Iterator[tuple[int, int]]:
        for a in range(start, stop, self.block):
            yield a, min(a + self.block, stop)

    def planes(self, tag: str, fill: float) -> Any:
        """This thread's planes (phases, block, C, tall, wide), ``fill`` where no copy writes."""
        shape = (len(self.phases), self.block, self.shape[1], self.tall, self.wide)
        return backend.scratch(f"pool_planes{tag}", shape, self.dtype, fill, self.layout)

    def split(self, x: Any, a: int, b: int, planes: Any) -> Any:
        """Images a..b of x into the planes; returned flat: (phases, images, C, tall * wide)."""
        part = x[a:b]
        for k, rows, cols, image_rows, image_cols in self.copies:
            np.copyto(planes[k, : b - a, :, rows, cols], part[:, :, image_rows, image_cols])
        return planes.reshape(*planes.shape[:3], -1)[:, : b - a]

    def merge(self, planes: Any, a: int, b: int, diff: Any) -> None:
        """The image pixels of the planes back into images a..b of diff (0 where no plane holds one)."""
        part = diff[a:b]
        part[...] = 0
        for k, rows, cols, image_rows, image_cols in self.copies:
            np.copyto(part[:, :, image_rows, image_cols], planes[k, : b - a, :, rows, cols])

    def runs_of(self, flat: Any) -> list[Any]:
        """Each offset's run (images, C, PH * wide) of the flat planes."""
        return [flat[k, :, :, at : at + self.span] for k, at in self.runs]

    def grid(self, a: int, b: int) -> tuple[int, ...]:
        return (b - a, self.shape[1], self.pooled[0], self.wide)


class PhasePool:
    """One layer's CPU pooling over the phase planes, for bottoms of one shape; ``geometry``: what it
    was made for (another geometry needs another)."""

    def __init__(
        self, workspace: Any, kernel: Any, stride: Any, pooled: Any, shape: Any, dtype: Any, pad: Any
    ):
        self.geometry = geometry_key(kernel, stride, pooled, shape, pad)
        self.workspace, self.shape, self.dtype = workspace, tuple(shape), dtype
        self.phases = Phases(workspace, kernel, stride, pooled, shape, dtype, pad)


def geometry_key(kernel: Any, stride: Any, pooled: Any, shape: Any, pad: Any) -> tuple[Any, ...]:
    return tuple(kernel), tuple(stride), tuple(pooled), tuple(shape), tuple(pad)


class MaxPool(PhasePool):
    """Choices and index tables of one layer's CPU MAX pooling, for bottoms of one shape."""

    def __init__(
        self, workspace: Any, kernel: Any, stride: Any, pooled: Any, shape: Any, dtype: Any, pad: Any
    ):
        super().__init__(workspace, kernel, stride, pooled, shape, dtype, pad)
        n, c, height, width = shape
        (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pooled
        count = kh * kw
        self.index = np.int8 if count <= 127 else np.int16 if count <= 32767 else np.int32
        self.choice = workspace.get("choice", (n, c, *pooled), self.index, np)
        self.live = workspace.get("live", (n, c, *pooled), bool, np)
        # the image's flat index of each window's first pixel (its top-left, maybe in the padding)
        first = (np.arange(ph) * sh - pad[0]).reshape(-1, 1) * width + np.arange(pw) * sw - pad[1]
        self.window = first.astype(np.intp)  # (PH, PW), within one channel's plane
        self.first = np.arange(c, dtype=np.intp).reshape(-1, 1, 1) * (height * width) + self.window
        self.offsets = np.array([i * width + j for i in range(kh) for j in range(kw)], np.intp)
        self.scatter_block = max(1, SCATTER_BYTES // max(c * height * width * np.dtype(dtype).itemsize, 1))

    def forward(self, x: Any, y: Any) -> None:
        """y = Caffe's MAX over every window of x (N, C, H, W); ``choice``/``live`` kept for backward."""
        phases, pw = self.phases, y.shape[3]
        if y.size == 0:
            return

        def images(start: int, stop: int) -> None:
            shape = (phases.block, self.shape[1], phases.span)
            best_all = backend.scratch("pool_best", shape, self.dtype)
            choice_all = backend.scratch("pool_choice", shape, self.index)
            more_all = backend.scratch("pool_more", shape, bool)
            scaled_all = backend.scratch("pool_scaled", shape, self.index)
            planes = phases.planes("", -np.inf)
            for a, b in phases.blocks(start, stop):
                views = phases.runs_of(phases.split(x, a, b, planes))
                best, choice = best_all[: b - a], choice_all[: b - a]
                more, scaled = more_all[: b - a], scaled_all[: b - a]
                np.fmax(views[0], LOWEST, out=best)  # fmax passes NaN over
                choice[...] = 0
                for k in range(1, len(views)):
                    np.greater(views[k], best, out=more)  # strictly greater: the first maximum stays
                    np.fmax(best, views[k], out=best)
                    # where(more, k, choice) as max(choice, more k): every earlier choice is below k
                    np.maximum(choice, np.multiply(more, self.index(k), out=scaled), out=choice)
                np.copyto(y[a:b], best.reshape(phases.grid(a, b))[..., :pw])
                np.copyto(self.choice[a:b], choice.reshape(phases.grid(a, b))[..., :pw])
                np.greater(y[a:b], LOWEST, out=self.live[a:b])  # -inf / NaN only: no choice, no gradient

        parallel.run(images, y.shape[0], np, parallel.grain(y[0:1].size * len(self.offsets)))

    def chosen(self, a: int, b: int) -> Any:
        """The flat index, in images a..b of the bottom, of each window's chosen pixel (0 where none)."""
        image = self.shape[1] * self.shape[2] * self.shape[3]
        at = self.offsets.take(self.choice[a:b])
        at += self.first
        at += (np.arange(a, b, dtype=np.intp) * image).reshape(-1, 1, 1, 1)
        live = self.live[a:b]
        if not live.all():
            at[~live] = 0  # in the image; the window's dy is 0 there
        return at

    def backward(self, dy: Any, diff: Any) -> None:
        """diff (N, C, H, W) = dy added onto each window's chosen pixel, one output at a time in
        raster order as Caffe's loop."""
        if diff.size == 0:  # an empty image: every window chose nothing (padding only)
            return
        flat = diff.reshape(-1)

        def images(start: int, stop: int) -> None:
            for a in range(start, stop, self.scatter_block):
                b = min(a + self.scatter_block, stop)
                diff[a:b] = 0
                live = self.live[a:b]
                sent = dy[a:b] if live.all() else np.where(live, dy[a:b], 0)
                np.add.at(flat, self.chosen(a, b).reshape(-1), sent.reshape(-1))

        parallel.run(images, diff.shape[0], np, parallel.grain(diff[0:1].size))

    def mask(self) -> Any:
        """Caffe's second top: the flat index h W + w of each window's choice in the image, -1 for none."""
        within = self.offsets.take(self.choice) + self.window
        return np.where(self.live, within, -1)


class AvePool(PhasePool):
    """One layer's CPU AVE pooling for bottoms of one shape; ``divisor`` (PH, PW): Caffe's window sizes."""

    def forward(self, x: Any, divisor: Any, y: Any) -> None:
        phases, pw = self.phases, y.shape[3]
        if y.size == 0:
            return

        def images(start: int, stop: int) -> None:
            shape = (phases.block, y.shape[1], phases.span)
            total_all = backend.scratch("pool_total", shape, self.dtype)
            planes = phases.planes("", 0)
            for a, b in phases.blocks(start, stop):
                views, total = phases.runs_of(phases.split(x, a, b, planes)), total_all[: b - a]
                if len(views) == 1:
                    np.copyto(total, views[0])
                else:
                    np.add(views[0], views[1], out=total)
                for view in views[2:]:
                    total += view
                with np.errstate(invalid="ignore", divide="ignore"):  # Caffe's 0 / 0 of empty windows
                    np.divide(total.reshape(phases.grid(a, b))[..., :pw], divisor, out=y[a:b])

        parallel.run(images, y.shape[0], np, parallel.grain(y[0:1].size * len(phases.runs)))

    def backward(self, dy: Any, divisor: Any, diff: Any) -> None:
        """diff (N, C, H, W) = each window's dy / divisor added onto its pixels."""
        phases, pw = self.phases, dy.shape[3]
        if dy.size == 0:
            diff[...] = 0
            return

        def images(start: int, stop: int) -> None:
            shape = (phases.block, dy.shape[1], phases.pooled[0], phases.wide)
            share_all = self.workspace.get(f"share{start}", shape, self.dtype, np, zeros=True)
            planes = phases.planes("d", 0)
            flat = planes.reshape(*planes.shape[:3], -1)
            for a, b in phases.blocks(start, stop):
                share = share_all[: b - a]  # its columns past PW stay 0: they add nothing
                with np.errstate(invalid="ignore", divide="ignore"):  # empty windows reach no pixel
                    np.divide(dy[a:b], divisor, out=share[..., :pw])
                planes[:, : b - a] = 0
                runs = phases.runs_of(flat[:, : b - a])
                for view in reversed(runs):  # each pixel's windows in raster order, as Caffe adds them
                    view += share.reshape(b - a, dy.shape[1], -1)
                phases.merge(planes, a, b, diff)

        parallel.run(images, dy.shape[0], np, parallel.grain(diff[0:1].size))
