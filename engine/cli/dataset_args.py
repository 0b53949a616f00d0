"""The command-line words of the data set tools, for main.py's parser (kept here so main.py only
registers them): Caffe's convert_imageset and compute_image_mean, which read their own gflags-style
flags (engine/cli/imageset_tools.py), and `dataset`, DIGITS's data set from class folders."""

from __future__ import annotations

import argparse
from typing import Any


def add_dataset_commands(sub: Any) -> None:
    """Add the three commands to ``sub`` (argparse's subparsers action)."""
    sub.add_parser(
        "convert_imageset", add_help=False,
        help="Caffe's convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME: images into an LMDB of Datums",
    )  # fmt: skip
    sub.add_parser(
        "compute_image_mean", add_help=False,
        help="Caffe's compute_image_mean [--backend lmdb] DB [OUT.binaryproto]: the mean image",
    )  # fmt: skip
    p = sub.add_parser(
        "dataset", help="a data set from a folder of class subfolders, as DIGITS makes one",
        description="One class per subfolder of FOLDER (images found recursively: .png .jpg .jpeg .bmp "
        ".ppm, any case). Writes OUT_DIR/train_lmdb, val_lmdb (test_lmdb), mean.binaryproto, labels.txt, "
        "the image lists and dataset.json.",
    )  # fmt: skip
    p.add_argument("folder", help="a folder with one subfolder of images per class")
    p.add_argument("out_dir", help="the folder to create")
    p.add_argument("--size", default="", metavar="HxW", help="image size (default: the first image's)")
    p.add_argument(
        "--resize", default="squash", choices=("squash", "crop", "fill", "half_crop"),
        help="squash: stretch; crop: fill the size, cut the overflow; fill: fit inside, pad with noise; "
        "half_crop: half of each (default squash)",
    )  # fmt: skip
    p.add_argument("--gray", action="store_true", help="one channel (default: three, BGR)")
    p.add_argument(
        "--val", type=float, default=25.0, metavar="PCT", help="%% of each class for validation (25)"
    )
    p.add_argument("--test", type=float, default=0.0, metavar="PCT", help="%% of each class for test (0)")
    p.add_argument("--val-folder", default="", metavar="DIR", help="take validation images from DIR instead")
    p.add_argument("--min-per-class", type=int, default=2, metavar="N", help="drop classes with fewer (2)")
    p.add_argument(
        "--max-per-class", type=int, default=0, metavar="N", help="use at most N of a class (0: all)"
    )
    p.add_argument("--encoding", default="none", choices=("none", "png", "jpg"), help="Datum encoding (none)")
    p.add_argument("--seed", type=int, default=0, help="the shuffle and split seed (0)")
    p.add_argument("--force", action="store_true", help="replace OUT_DIR if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def parse_size(text: str) -> tuple[int, int] | None:
    """``HxW`` as (H, W); "" as None. argparse-style errors are the caller's."""
    if not text:
        return None
    height, sep, width = text.lower().partition("x")
    if not sep or not height.isdigit() or not width.isdigit() or int(height) < 1 or int(width) < 1:
        raise argparse.ArgumentTypeError(f"--size {text}: expected HxW, e.g. 32x32")
    return int(height), int(width)
