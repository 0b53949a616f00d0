"""The data list parsers at R-CNN's scale: WindowData's window file and ImageData's image list.

    python -m bench.parsers [--windows 10000 100000 1000000] [--per-image 2000] [--repeat 1]

For each size a file is generated in a temporary folder and parsed, best of ``--repeat``. The
peer, timed side by side on the same text, is ``str.split()`` (the tokenising any parser pays at
least); ``x split`` is the parser's CPU time over split's and ``us/line`` its CPU time per
line (CPU time, which a busy machine does not inflate). Linear parsing shows as a time per line
that stays flat as the size grows tenfold (the old window parser counted newlines from the start for
every token: 80,000 windows took 117 s). The target: a million windows in a few seconds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.data.image_list import read_list
from engine.data.window_file import read_window_file


def window_text(windows: int, per_image: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    lines = []
    for image in range((windows + per_image - 1) // per_image):
        count = min(per_image, windows - image * per_image)
        lines += [f"# {image}", f"images/{image:07d}.jpg", "3 480 640", str(count)]
        corners = rng.integers(0, 400, (count, 4))
        overlap = np.round(rng.random(count), 4)
        labels = np.where(overlap >= 0.5, rng.integers(1, 21, count), 0)
        lines += [
            f"{label} {o:.4f} {x1} {y1} {x1 + w} {y1 + h}"
            for label, o, (x1, y1, w, h) in zip(labels, overlap, corners)
        ]
    return "\n".join(lines) + "\n"


def list_text(lines: int) -> str:
    return "".join(f"images/n{i // 1000:05d}/{i:08d}.JPEG {i % 1000}\n" for i in range(lines))


def best(run: Callable[[Path], object], path: Path, repeat: int) -> tuple[float, float]:
    """(wall, CPU) seconds, best of ``repeat`` (CPU time is what a busy machine does not inflate)."""
    times = []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        run(path)
        times.append((time.perf_counter() - wall, time.process_time() - cpu))
    return min(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.parsers")
    parser.add_argument("--windows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--per-image", type=int, default=2000, help="windows per image (R-CNN: ~2000)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    print(
        f"{'file':<34} {'lines':>9} {'parse s':>8} {'cpu s':>7} {'split s':>8} {'x split':>8} {'us/line':>8}"
    )
    with tempfile.TemporaryDirectory() as folder:
        cases: list[tuple[str, str, Callable[[Path], object]]] = []
        for n in args.windows:
            text = window_text(n, args.per_image)
            cases.append((f"window file, {n:,} windows", text, lambda p: read_window_file(p, 0.5, 0.5)))
        small = min(args.windows)
        text = window_text(small, 1)
        cases.append((f"window file, {small:,} x 1 window", text, lambda p: read_window_file(p, 0.5, 0.5)))
        for n in args.windows:
            cases.append((f"image list, {n:,} lines", list_text(n), read_list))
        for i, (name, text, parse) in enumerate(cases):
            path = Path(folder) / f"case{i}.txt"
            path.write_text(text)
            lines = text.count("\n")
            seconds, cpu = best(parse, path, args.repeat)
            _, split = best(lambda p: p.read_text().split(), path, args.repeat)
            ratio, per_line = cpu / split, cpu / lines * 1e6
            numbers = f"{seconds:>8.2f} {cpu:>7.2f} {split:>8.3f} {ratio:>8.1f} {per_line:>8.2f}"
            print(f"{name:<34} {lines:>9,} {numbers}")


if __name__ == "__main__":
    main()
