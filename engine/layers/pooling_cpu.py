"""MAX pooling on the CPU as two tournaments, with no patch or index arrays: any window geometry.

Caffe's MAX keeps, from -FLT_MAX, each value strictly greater than the best so far, in raster
order: the first maximum of the window wins and NaN never does. That is two tournaments, each over
strided views of the padded frame (N, C, FH, FW) (-inf in the padding):
  across: for every frame row and output column, the best of the kw values at columns
          pw stride_w + j (``row_max`` (N, C, FH, PW), ``across`` the winning j);
  down:   for every output, the best of the kh row maxima at rows ph stride_h + i (``down``: i).
The first row holding the window's maximum, then the first column of it in that row, is the
window's first maximum in raster order. Choices are int8; backward turns them into the chosen
pixels' flat indices and adds dy there in the outputs' raster order (overlapping windows sum).
Images are independent: ranges of them run on engine.parallel's threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine import parallel

LOWEST = float(np.finfo(np.float32).min)  # Caffe's MAX pooling starts from -FLT_MAX


def candidates(a: Any, count: int, stride: int, pooled: int, axis: int) -> list[Any]:
    """The ``count`` strided views of ``a`` along ``axis`` (-1 or -2) that a window's offsets read."""
    views = []
    for k in range(count):
        window = slice(k, k + stride * (pooled - 1) + 1, stride)
        views.append(a[..., window] if axis == -1 else a[..., window, :])
    return views


def first_max(
    values: list[Any], best: Any, choice: Any, greater: Any, scaled: Any, clean: bool = False
) -> None:
    """best = Caffe's max over ``values`` (from -FLT_MAX, strictly greater wins), choice = the
    index of the first maximum (0 where nothing beat -FLT_MAX). ``clean``: the values are earlier
    maxima (no NaN, none below -FLT_MAX), so the first needs no comparison with -FLT_MAX."""
    if len(values) == 1:
        np.fmax(values[0], LOWEST, out=best)  # fmax passes NaN over
        choice[...] = 0
        return
    first = values[0]
    if not clean:
        first = np.fmax(first, LOWEST, out=best)
    np.greater(values[1], first, out=greater)
    np.fmax(first, values[1], out=best)
    np.copyto(choice, greater)
    for k in range(2, len(values)):
        np.greater(values[k], best, out=greater)
        np.fmax(best, values[k], out=best)
        # where(greater, k, choice) as max(choice, greater k): every earlier choice is below k
        np.maximum(choice, np.multiply(greater, np.int8(k), out=scaled), out=choice)


class MaxPool:
    """Scratch and choices of one layer's CPU MAX pooling, for bottoms of one shape."""

    def __init__(
        self, workspace: Any, kernel: Any, stride: Any, pooled: Any, frame: Any, shape: Any, dtype: Any
    ):
        n, c = shape[:2]
        (fh, _), (ph, pw) = frame, pooled
        get = workspace.get
        self.kernel, self.stride, self.pooled = kernel, stride, pooled
        self.apart = all(s >= k for s, k in zip(stride, kernel))
        self.row_max = get("row_max", (n, c, fh, pw), dtype, np)
        self.across = get("across", (n, c, fh, pw), np.int8, np)
        self.down = get("down", (n, c, ph, pw), np.int8, np)
        self.live = get("live", (n, c, ph, pw), bool, np)
        self.scratch = {
            f"{name}_{size}": get(f"{name}_{size}", (n, c, rows, pw), kind, np)
            for name, kind in (("greater", bool), ("scaled", np.int8))
            for size, rows in (("rows", fh), ("out", ph))
        }
        self.diffs = (get("live_dy", (n, c, ph, pw), dtype, np), get("row_diff", (n, c, fh, pw), dtype, np))
        self.spread = (
            get("spread_out", (n, c, ph, pw), dtype, np),
            get("spread_rows", (n, c, fh, pw), dtype, np),
        )

    def part(self, name: str, rows: str, s: slice) -> Any:
        return self.scratch[f"{name}_{rows}"][s]

    def forward(self, framed: Any, y: Any) -> None:
        (kh, kw), (sh, sw), (ph, pw) = self.kernel, self.stride, self.pooled

        def images(start: int, stop: int) -> None:
            s = slice(start, stop)
            across = candidates(framed[s], kw, sw, pw, -1)
            first_max(
                across,
                self.row_max[s],
                self.across[s],
                self.part("greater", "rows", s),
                self.part("scaled", "rows", s),
            )
            down = candidates(self.row_max[s], kh, sh, ph, -2)
            first_max(
                down, y[s], self.down[s], self.part("greater", "out", s), self.part("scaled", "out", s), True
            )
            np.greater(y[s], LOWEST, out=self.live[s])  # a window of -inf / NaN only: no choice, no gradient

        parallel.run(images, y.shape[0], np, parallel.grain(framed[0:1].size))

    def backward(self, dy: Any, diff: Any, pad: Any) -> None:
        """diff (N, C, H, W) = dy added onto each window's chosen element, one output at a time in
        raster order as Caffe's loop (``add.at`` of the chosen elements' flat indices)."""
        n, c, height, width = diff.shape
        live_dy = self.diffs[0]
        np.multiply(dy, self.live, out=live_dy)  # a window that chose nothing sends nothing
        if diff.size == 0:  # an empty image: every window chose nothing (padding only)
            return

        def images(start: int, stop: int) -> None:
            s = slice(start, stop)
            h, w = self.chosen(pad, s)
            at = np.where(self.live[s], h * width + w, 0)  # in the image; 0 where no choice (adds 0)
            at += np.arange((stop - start) * c).reshape(stop - start, c, 1, 1) * (height * width)
            part = diff[s]
            part[...] = 0
            np.add.at(part.reshape(-1), at.reshape(-1), live_dy[s].reshape(-1))

        parallel.run(images, n, np, parallel.grain(diff[0:1].size))

    def backward_apart(self, dy: Any, frame: Any) -> None:
        """For windows that do not overlap (``apart``: stride >= kernel), frame (N, C, FH, FW) = dy
        sent down the two tournaments by masked products: each pixel is in one window at most."""
        (kh, kw), (sh, sw), (ph, pw) = self.kernel, self.stride, self.pooled
        live_dy, row_diff = self.diffs[0], self.row_max  # the row maxima are not needed any more

        def images(start: int, stop: int) -> None:
            s = slice(start, stop)
            np.multiply(dy[s], self.live[s], out=live_dy[s])  # a window that chose nothing sends nothing
            if sh > kh:
                row_diff[s] = 0
            for i, view in enumerate(candidates(row_diff[s], kh, sh, ph, -2)):
                np.multiply(live_dy[s], self.down[s] == i, out=view)
            frame[s] = 0
            for j, view in enumerate(candidates(frame[s], kw, sw, pw, -1)):
                np.multiply(row_diff[s], self.across[s] == j, out=view)

        parallel.run(images, dy.shape[0], np, parallel.grain(frame[0:1].size))

    def chosen(self, pad: Any, s: slice = slice(None)) -> tuple[Any, Any]:
        """The image row and column of each window's choice, for images ``s`` (meaningful where ``live``)."""
        (kh, _), (sh, sw), (ph, pw) = self.kernel, self.stride, self.pooled
        down = self.down[s]
        rows = candidates(self.across[s], kh, sh, ph, -2)
        column = rows[0].copy()  # across's pick in the chosen row (arithmetic: np.choose is slower)
        for i in range(1, kh):
            column += (down == i) * (rows[i] - rows[0])
        row = np.arange(ph, dtype=np.intp).reshape(-1, 1) * sh - pad[0] + down
        return row, np.arange(pw, dtype=np.intp) * sw - pad[1] + column

    def mask(self, size: Any, pad: Any) -> Any:
        """Caffe's second top: the flat index h W + w of each window's choice in the image, -1 for none."""
        h, w = self.chosen(pad)
        return np.where(self.live, h * size[1] + w, -1)


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
