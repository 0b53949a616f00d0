"""Data set tools' speed: convert_imageset over N small PNGs, and `dataset` over M 32x32 images.

    python -m bench.dataset_speed [--convert 10000] [--dataset 50000] [--size 32] [--workers 2]

Generates the PNGs into a temporary folder (not timed), then runs each tool in this process and
prints images/s and the CPU time per image (all threads). Real Caffe's convert_imageset, when a
build is at hand (CAFFE_TOOLS=/path/to/build/tools), runs on the same list for comparison.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image


def make_pngs(root: Path, n: int, size: int, classes: int = 10) -> list[str]:
    rng = np.random.default_rng(0)
    names = []
    for i in range(n):
        name = f"c{i % classes}/img{i:06d}.png"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(root / name)
        names.append(name)
    return names


def timed(what: str, n: int, run) -> None:  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{what}: {n} images in {wall:.2f} s = {n / wall:.0f} images/s, CPU {1e6 * cpu / n:.0f} us/image")


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--convert", type=int, default=10000)
    p.add_argument("--dataset", type=int, default=50000)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)
    from engine.data.dataset_builder import build_dataset
    from engine.data.dataset_plan import DatasetOptions, plan_dataset
    from engine.data.imageset import ImagesetOptions, convert_imageset

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = make_pngs(root / "pics", max(args.convert, args.dataset), args.size)
        listfile = root / "list.txt"
        listfile.write_text("".join(f"{name} {i % 10}\n" for i, name in enumerate(names[: args.convert])))
        quiet = lambda level, message: None  # noqa: E731
        if args.convert:
            timed(
                "convert_imageset", args.convert,
                lambda: convert_imageset(f"{root}/pics/", listfile, root / "db", ImagesetOptions(), quiet),
            )  # fmt: skip
        caffe = os.environ.get("CAFFE_TOOLS")
        if caffe and args.convert:
            tool = [
                os.path.join(caffe, "convert_imageset"),
                f"{root}/pics/",
                str(listfile),
                str(root / "caffe_db"),
            ]
            timed(
                "real Caffe convert_imageset",
                args.convert,
                lambda: subprocess.run(tool, check=True, capture_output=True),
            )
        if args.dataset:
            for name in names[args.dataset :]:
                os.unlink(root / "pics" / name)
            plan = plan_dataset(root / "pics", DatasetOptions(size=(args.size, args.size), val_pct=10))
            timed(
                f"dataset ({args.workers} worker threads)", args.dataset,
                lambda: build_dataset(plan, root / "ds", workers=args.workers),
            )  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
