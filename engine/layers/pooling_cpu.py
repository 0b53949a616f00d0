"""Pooling on the CPU over strided views of the padded frame, with no patch arrays: any window geometry.

MAX: Caffe keeps, from -FLT_MAX, each value strictly greater than the best so far, in raster order:
the first maximum of the window wins and NaN never does. So a tournament over the window's kh kw
kernel offsets, in raster order, each a strided view of the frame (N, C, FH, FW) (-inf in the
padding): ``best`` the running maximum, ``choice`` (int8) the offset that set it. Backward adds dy
at each window's chosen pixel (flat indices: a per-geometry table of the windows' first pixels plus
the offset's), in the outputs' raster order as Caffe's loop (``add.at``: overlapping windows sum).
The work goes a cache-sized block of images at a time (the frame of a block is copied into a small
scratch whose border stays -inf), and ranges of images run on engine.parallel's threads.
AVE: separable sums, along each window row and then down the row sums.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine import parallel

LOWEST = float(np.finfo(np.float32).min)  # Caffe's MAX pooling starts from -FLT_MAX
BLOCK_BYTES = 2 << 20  # a block's phase planes: read kh kw times while they stay in a core's cache
SCATTER_BYTES = 1 << 20  # a block of the bottom's diff that backward adds into


def candidates(a: Any, count: int, stride: int, pooled: int, axis: int) -> list[Any]:
    """The ``count`` strided views of ``a`` along ``axis`` (-1 or -2) that a window's offsets read."""
    views = []
    for k in range(count):
        window = slice(k, k + stride * (pooled - 1) + 1, stride)
        views.append(a[..., window] if axis == -1 else a[..., window, :])
    return views


def phase_rows(phase: int, stride: int, pad: int, size: int, extent: int) -> tuple[slice, slice] | None:
    """Rows u of a phase plane (frame rows phase + u stride) that hold image rows, and those image rows."""
    first = max(0, -(-(pad - phase) // stride))
    stop = min(extent, (size - 1 + pad - phase) // stride + 1)
    if stop <= first:
        return None
    start = phase + first * stride - pad
    return slice(first, stop), slice(start, start + (stop - first - 1) * stride + 1, stride)


class MaxPool:
    """Scratch, choices and index tables of one layer's CPU MAX pooling, for bottoms of one shape;
    ``pad`` places the image in the frame.

    A block of images is split into the frame's phases (one plane per (row mod stride_h, column
    mod stride_w) a window offset reads, -inf where the frame is padding), each plane ``wide`` =
    PW + (kw - 1) // stride_w columns wide: kernel offset (i, j) then reads, for all outputs of an
    image channel, one contiguous run of its phase plane, PH x wide values from (i // sh, j // sw),
    with the last ``wide - PW`` columns of each row beyond the windows (computed, then dropped)."""

    def __init__(
        self,
        workspace: Any,
        kernel: Any,
        stride: Any,
        pooled: Any,
        frame: Any,
        shape: Any,
        dtype: Any,
        pad: Any = (0, 0),
    ):
        n, c, height, width = shape
        self.workspace, self.kernel, self.stride, self.pooled = workspace, kernel, stride, pooled
        self.pad, self.shape, self.dtype = tuple(pad), tuple(shape), dtype
        self.geometry = (kernel, stride, pooled, frame, shape, pad)
        get = workspace.get
        self.choice = get("choice", (n, c, *pooled), np.int8, np)
        self.live = get("live", (n, c, *pooled), bool, np)
        (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pooled
        # the image's flat index of each window's first pixel (its top-left, maybe in the padding)
        first = (np.arange(ph) * sh - self.pad[0]).reshape(-1, 1) * width + np.arange(pw) * sw - self.pad[1]
        self.window = first.astype(np.intp)  # (PH, PW), within one channel's plane
        self.first = np.arange(c, dtype=np.intp).reshape(-1, 1, 1) * (height * width) + self.window
        self.offsets = np.array([i * width + j for i in range(kh) for j in range(kw)], np.intp)
        self.wide = pw + (kw - 1) // sw
        self.tall = ph + (kh - 1) // sh + 1  # one more row: the last run may reach past the last row
        self.phases = sorted({(i % sh, j % sw) for i in range(kh) for j in range(kw)})
        self.runs = [
            (self.phases.index((i % sh, j % sw)), (i // sh) * self.wide + j // sw)
            for i in range(kh)
            for j in range(kw)
        ]
        plane = self.tall * self.wide * np.dtype(dtype).itemsize
        self.block = max(1, BLOCK_BYTES // max(c * plane * len(self.phases), 1))
        self.scatter_block = max(1, SCATTER_BYTES // max(c * height * width * np.dtype(dtype).itemsize, 1))
        self.copies = []  # (phase, plane rows, plane columns, image rows, image columns)
        for k, (a, b) in enumerate(self.phases):
            rows = phase_rows(a, sh, self.pad[0], height, self.tall)
            cols = phase_rows(b, sw, self.pad[1], width, self.wide)
            if rows is not None and cols is not None:
                self.copies.append((k, rows[0], cols[0], rows[1], cols[1]))

    def blocks(self, start: int, stop: int) -> Any:
        for a in range(start, stop, self.block):
            yield a, min(a + self.block, stop)

    def split(self, x: Any, a: int, b: int, tag: int) -> Any:
        """Images a..b of x as phase planes (phases, images, C, tall * wide) in this thread's scratch
        (made -inf: the copies write only where the image is)."""
        shape = (len(self.phases), self.block, self.shape[1], self.tall, self.wide)
        planes = self.workspace.get(f"phases{tag}", shape, self.dtype, np, fill=-np.inf)
        part = x[a:b]
        for k, rows, cols, image_rows, image_cols in self.copies:
            np.copyto(planes[k, : b - a, :, rows, cols], part[:, :, image_rows, image_cols])
        return planes.reshape(*shape[:3], -1)[:, : b - a]

    def forward(self, x: Any, y: Any) -> None:
        """y = Caffe's MAX over every window of x (N, C, H, W); ``choice``/``live`` kept for backward."""
        (ph, pw), wide, c = self.pooled, self.wide, self.shape[1]
        span = ph * wide

        def images(start: int, stop: int) -> None:
            ws, shape = self.workspace, (self.block, c, span)
            best_all = ws.get(f"best{start}", shape, self.dtype, np)
            choice_all = ws.get(f"choice{start}", shape, np.int8, np)
            more_all = ws.get(f"more{start}", shape, bool, np)
            scaled_all = ws.get(f"scaled{start}", shape, np.int8, np)
            for a, b in self.blocks(start, stop):
                planes = self.split(x, a, b, start)
                views = [planes[k, :, :, at : at + span] for k, at in self.runs]
                best, choice = best_all[: b - a], choice_all[: b - a]
                more, scaled = more_all[: b - a], scaled_all[: b - a]
                np.fmax(views[0], LOWEST, out=best)  # fmax passes NaN over
                choice[...] = 0
                for k in range(1, len(views)):
                    np.greater(views[k], best, out=more)  # strictly greater: the first maximum stays
                    np.fmax(best, views[k], out=best)
                    # where(more, k, choice) as max(choice, more k): every earlier choice is below k
                    np.maximum(choice, np.multiply(more, np.int8(k), out=scaled), out=choice)
                grid = (b - a, c, ph, wide)
                np.copyto(y[a:b], best.reshape(grid)[..., :pw])
                np.copyto(self.choice[a:b], choice.reshape(grid)[..., :pw])
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
                sent = np.where(self.live[a:b], dy[a:b], 0) if not self.live[a:b].all() else dy[a:b]
                np.add.at(flat, self.chosen(a, b).reshape(-1), sent.reshape(-1))

        parallel.run(images, diff.shape[0], np, parallel.grain(diff[0:1].size))

    def mask(self) -> Any:
        """Caffe's second top: the flat index h W + w of each window's choice in the image, -1 for none."""
        within = self.offsets.take(self.choice) + self.window
        return np.where(self.live, within, -1)


def ave_forward(
    framed: Any, kernel: Any, stride: Any, pooled: Any, divisor: Any, y: Any, row_sum: Any
) -> None:
    """AVE: y = the window sums of the zero-padded frame, as sums along each window row (kw strided
    views, into ``row_sum`` (N, C, FH, PW)) then down the kh row sums, over Caffe's ``divisor``."""
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pooled

    def images(start: int, stop: int) -> None:
        s = slice(start, stop)
        across, out = candidates(framed[s], kw, sw, pw, -1), row_sum[s]
        np.copyto(out, across[0])
        for view in across[1:]:
            out += view
        down, total = candidates(out, kh, sh, ph, -2), y[s]
        np.copyto(total, down[0])
        for view in down[1:]:
            total += view
        with np.errstate(invalid="ignore", divide="ignore"):  # Caffe's 0 / 0 of empty windows
            np.divide(total, divisor, out=total)

    parallel.run(images, y.shape[0], np, parallel.grain(framed[0:1].size))


def ave_backward(
    dy: Any, kernel: Any, stride: Any, pooled: Any, divisor: Any, frame_diff: Any, row_diff: Any
) -> None:
    """frame_diff (N, C, FH, FW) = each window's dy / divisor spread over it: up the kh rows of row
    sums (``row_diff``), then along the kw columns of each row."""
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pooled

    def images(start: int, stop: int) -> None:
        s = slice(start, stop)
        with np.errstate(invalid="ignore", divide="ignore"):  # empty windows reach no pixel
            share = dy[s] / divisor
        rows, frame = row_diff[s], frame_diff[s]
        rows[...] = 0
        for view in candidates(rows, kh, sh, ph, -2):
            view += share
        frame[...] = 0
        for view in candidates(frame, kw, sw, pw, -1):
            view += rows

    parallel.run(images, dy.shape[0], np, parallel.grain(frame_diff[0:1].size))
