"""Fuzz the readers issue 24-26 added: every run is one line and exit 2, or a clean skip line per item.

The inputs are made here: image lists (convert_imageset, evaluate --data), class folders (dataset,
evaluate --data; symlink loops, folders and FIFOs named like images, zero-byte and truncated files,
non-UTF-8 names, PNG headers claiming huge sizes), labels files (classify/evaluate --labels),
images given to classify (truncated, a wrong extension, CMYK JPEG, 16-bit PNG, animated GIF, random
byte flips of valid files), evaluation outputs (--csv to a folder, a link, a missing folder) and
compare-init's settings (--variant spellings, --layers, --out). Each case runs main.main in this
process with stdout and stderr captured and an alarm as the hang guard, then is judged:

* exit 0, or exit 2 with the last stderr line the one "error ..." line;
* no traceback printed and no exception out of main.main;
* nothing half-written: no ``.*.partial`` folder or ``*.tmp`` file left beside an output, and an
  output that did not exist before a failed run does not exist after it.

    .venv/bin/python -m bench.fuzz_readers [--seeds N] [--seed S] [--only KIND] [--flips N]

prints one line per failure and the totals (runs, failures per kind). tests/e2e/test_fuzz_readers.py
runs a small sample of the same cases.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import logging
import os
import random
import signal
import struct
import sys
import tempfile
import traceback
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from PIL import Image

TIMEOUT_S = 60
LAYERS = """
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 2 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip"
  inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
"""
DEPLOY = (
    'layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 6 dim: 6 } } }'
    + LAYERS
    + 'layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }\n'
)
TRAIN = (
    'layer { name: "d" type: "DummyData" top: "data" top: "label" dummy_data_param { shape { dim: 4 dim: 3'
    ' dim: 6 dim: 6 } shape { dim: 4 } data_filler { type: "gaussian" } data_filler { type: "constant" } } }'
    + LAYERS
    + 'layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }\n'
)
SOLVER = 'net: "train.prototxt"\nbase_lr: 0.01\nlr_policy: "fixed"\nmax_iter: 2\ndisplay: 0\n'


@dataclasses.dataclass
class Case:
    kind: str
    name: str
    argv: list[str]
    outputs: list[Path] = dataclasses.field(default_factory=list)  # must be whole or absent


@dataclasses.dataclass
class Verdict:
    case: Case
    code: int | None
    problem: str  # "" when the run behaved
    last_line: str = ""  # stderr's last line


# --- inputs --------------------------------------------------------------------------------------
def png_bytes(h: int = 8, w: int = 8, mode: str = "RGB", seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    shape = (h, w) if mode in ("L", "P") else (h, w, len(mode))
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode).save(buf, "PNG")
    return buf.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims width x height 8-bit RGB, with one tiny IDAT (a decompression bomb's head)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def png_bomb(side: int) -> bytes:
    """A real, complete gray PNG of side x side zeros: a few hundred KB that decode to side**2 bytes."""
    row = b"\0" + b"\0" * side
    comp = zlib.compressobj(9)
    body = b"".join(comp.compress(row) for _ in range(side)) + comp.flush()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def encoded(image: Image.Image, fmt: str, **kw: object) -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt, **kw)
    return buf.getvalue()


def bad_images(rng: random.Random) -> Iterator[tuple[str, bytes | str]]:
    """(file name, its bytes) or (file name, "dir"/"fifo"/"loop"/"dangling") for a special file."""
    rgb = Image.fromarray(np.random.default_rng(1).integers(0, 256, (9, 7, 3), dtype=np.uint8))
    good_png, good_jpg = encoded(rgb, "PNG"), encoded(rgb, "JPEG")
    yield "zero.png", b""
    yield "half.png", good_png[: len(good_png) // 2]
    yield "half.jpg", good_jpg[: len(good_jpg) // 2]
    yield "png_named.jpg", good_png
    yield "jpg_named.png", good_jpg
    yield "text.png", b"not an image\n"
    yield "cmyk.jpg", encoded(rgb.convert("CMYK"), "JPEG")
    yield "gray16.png", encoded(Image.fromarray(np.arange(63, dtype=np.uint16).reshape(7, 9) * 1000), "PNG")
    yield (
        "int32.tif",
        encoded(Image.fromarray(np.arange(63, dtype=np.int32).reshape(7, 9) * 99999, "I"), "TIFF"),
    )
    yield "float.tif", encoded(Image.fromarray(np.ones((4, 4), np.float32)), "TIFF")
    frames = [rgb.convert("P"), rgb.rotate(90).convert("P")]
    yield "anim.gif", encoded(frames[0], "GIF", save_all=True, append_images=frames[1:])
    yield "anim_named.png", encoded(frames[0], "GIF", save_all=True, append_images=frames[1:])
    yield "rgba.png", png_bytes(5, 5, "RGBA")
    yield "la.png", encoded(rgb.convert("LA"), "PNG")
    yield "palette.png", png_bytes(5, 5, "P")
    yield "one_bit.png", encoded(rgb.convert("1"), "PNG")
    yield "huge_header.png", png_header_only(100_000, 100_000)
    yield "wide_header.png", png_header_only(2**31 - 1, 1)
    yield "zero_width.png", png_header_only(0, 5)
    yield "bomb.png", png_bomb(12_000)
    yield "folder.png", "dir"
    yield "fifo.png", "fifo"
    yield "loop.png", "loop"
    yield "dangling.png", "dangling"
    yield "\udcff\udcfe name.png", good_png  # a non-UTF-8 byte name (surrogate-escaped)
    yield "new\nline.png", good_png
    formats = {
        "png": good_png,
        "jpg": good_jpg,
        "gif": encoded(rgb, "GIF"),
        "bmp": encoded(rgb, "BMP"),
        "tif": encoded(rgb, "TIFF"),
        "ppm": encoded(rgb, "PPM"),
    }
    for i in range(rng.randrange(6, 12)):  # random byte flips of valid files
        ext = rng.choice(sorted(formats))
        base = bytearray(formats[ext])
        for _ in range(rng.randrange(1, 8)):
            base[rng.randrange(len(base))] = rng.randrange(256)
        yield f"flip{i}.{ext}", bytes(base)
        yield f"cut{i}.png", good_png[: rng.randrange(len(good_png))]


def make(folder: Path, name: str, content: bytes | str) -> Path:
    path = folder / name
    if content == "dir":
        path.mkdir()
    elif content == "fifo":
        os.mkfifo(path)
    elif content == "loop":
        path.symlink_to(path.name)
    elif content == "dangling":
        path.symlink_to("nowhere.png")
    else:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    return path


# --- cases ---------------------------------------------------------------------------------------
def setup(root: Path) -> dict[str, Path]:
    import engine as caffe

    (root / "deploy.prototxt").write_text(DEPLOY)
    (root / "train.prototxt").write_text(TRAIN)
    (root / "solver.prototxt").write_text(SOLVER)
    net = caffe.Net(str(root / "deploy.prototxt"), caffe.TEST)
    net.save(str(root / "w.caffemodel"))
    good = root / "good.png"
    good.write_bytes(png_bytes(8, 8))
    return {
        "deploy": root / "deploy.prototxt",
        "weights": root / "w.caffemodel",
        "good": good,
        "solver": root / "solver.prototxt",
    }


def image_cases(root: Path, files: dict[str, Path], rng: random.Random) -> Iterator[Case]:
    folder = root / "images"
    folder.mkdir()
    (root / "good.png").write_bytes(files["good"].read_bytes())
    model = ["--model", str(files["deploy"]), "--weights", str(files["weights"])]
    for n, (name, content) in enumerate(bad_images(rng)):
        path = make(folder, name, content)
        yield Case("classify", name, ["classify", *model, "--center-only", str(path)])
        # convert_imageset: a list of one good image and this one; the bad one is a skip line
        lst = root / f"list{n}.txt"
        lst.write_bytes(b"good.png 0\n" + os.fsencode(f"images/{name}").replace(b"\n", b"?") + b" 1\n")
        db = root / f"db{n}"
        yield Case("convert_imageset", name, ["convert_imageset", f"{root}/", str(lst), str(db)], [db])
        # dataset: two classes, the bad image among good ones
        classes = root / f"classes{n}"
        for c in ("a", "b"):
            (classes / c).mkdir(parents=True)
            for i in range(3):
                (classes / c / f"{i}.png").write_bytes(png_bytes(6, 6, seed=i))
        make(classes / "a", name, content)
        out = root / f"set{n}"
        yield Case("dataset", name, ["dataset", "--quiet", "--val", "34", str(classes), str(out)], [out])
        argv = ["evaluate", *model, "--data", str(classes), "--resize", "6,6"]
        yield Case("evaluate", name, argv)


def classify_input_cases(root: Path, files: dict[str, Path], rng: random.Random) -> Iterator[Case]:
    """What classify's IMAGE|FOLDER|LIST arguments may name besides an image."""
    model = ["--model", str(files["deploy"]), "--weights", str(files["weights"])]
    (root / "empty_folder").mkdir()
    (root / "loop_folder").mkdir()
    (root / "loop_folder" / "back").symlink_to("..")
    (root / "loop_folder" / "x.png").write_bytes(files["good"].read_bytes())
    (root / "not_images").mkdir()
    (root / "not_images" / "a.txt").write_text("x")
    os.mkfifo(root / "list_fifo.txt")
    (root / "binary.lst").write_bytes(bytes(range(256)))
    (root / "missing.lst").write_text("nowhere.png 0\n")
    (root / "empty.lst").write_text("# nothing\n")
    (root / "latin1.lst").write_bytes(b"ch\xe8vre.png 0\n")
    names = [
        "empty_folder",
        "loop_folder",
        "not_images",
        "list_fifo.txt",
        "binary.lst",
        "missing.lst",
        "empty.lst",
        "latin1.lst",
    ]
    for name in names:
        yield Case("classify", f"argument: {name}", ["classify", *model, "--center-only", str(root / name)])
    yield Case("classify", "argument: /dev/zero", ["classify", *model, "/dev/zero"])
    for name in [*names, "/dev/zero"]:
        data = name if name.startswith("/") else str(root / name)
        yield Case("evaluate", f"--data {name}", ["evaluate", *model, "--data", data, "--resize", "6,6"])
    out = root / "p.npy"
    yield Case(
        "classify",
        "--out over the weights",
        ["classify", *model, "--out", str(files["weights"]), str(files["good"])],
    )
    yield Case("classify", "--out fine", ["classify", *model, "--out", str(out), str(files["good"])], [out])


def list_cases(root: Path, files: dict[str, Path], rng: random.Random) -> Iterator[Case]:
    """convert_imageset / evaluate over list files that are themselves bad."""
    shutil_copy = files["good"].read_bytes()
    (root / "g.png").write_bytes(shutil_copy)
    lists = {
        "empty": b"",
        "blank lines": b"\n\n  \n",
        "no label": b"g.png\n",
        "label not a number": b"g.png cat\n",
        "label too big": b"g.png 99999999999999\n",
        "negative label": b"g.png -1\n",
        "binary": bytes(range(256)) * 4,
        "non-UTF-8 name": b"\xff\xfe.png 0\ng.png 1\n",
        "NUL in name": b"g\0.png 0\ng.png 1\n",
        "only a label": b" 3\n",
        "CRLF": b"g.png 0\r\ng.png 1\r\n",
        "tabs": b"g.png\t0\n",
        "a folder as an image": b". 0\ng.png 1\n",
        "long line": b"x" * 100_000 + b".png 0\ng.png 1\n",
        "many missing": b"".join(b"missing%d.png 0\n" % i for i in range(200)) + b"g.png 1\n",
        "all missing": b"a.png 0\nb.png 1\n",
        "UTF-16": "g.png 0\n".encode("utf-16"),
        "absolute path": b"/etc/passwd 0\n",
    }
    for i in range(rng.randrange(8, 16)):
        base = bytearray(b"g.png 0\ng.png 1\n")
        for _ in range(rng.randrange(1, 5)):
            base[rng.randrange(len(base))] = rng.randrange(256)
        lists[f"flipped {i}"] = bytes(base)
    model = ["--model", str(files["deploy"]), "--weights", str(files["weights"])]
    for n, (name, text) in enumerate(lists.items()):
        lst = root / f"badlist{n}.txt"
        lst.write_bytes(text)
        db = root / f"listdb{n}"
        yield Case(
            "convert_imageset", f"list: {name}", ["convert_imageset", f"{root}/", str(lst), str(db)], [db]
        )
        yield Case(
            "convert_imageset",
            f"list: {name} (encoded, shuffle, check_size)",
            ["convert_imageset", "--encoded", "--shuffle", "--check_size", f"{root}/", str(lst), str(db)],
            [db],
        )
        yield Case("evaluate", f"list: {name}", ["evaluate", *model, "--data", str(lst), "--resize", "6,6"])
    for special in ("dir", "fifo", "loop", "dangling"):
        path = make(root, f"list_{special}.txt", special)
        db = root / f"db_{special}"
        yield Case(
            "convert_imageset",
            f"list is a {special}",
            ["convert_imageset", f"{root}/", str(path), str(db)],
            [db],
        )
    # the database named where it cannot go
    lst = root / "ok_list.txt"
    lst.write_bytes(b"g.png 0\n")
    (root / "existing_db").mkdir()
    (root / "a_file").write_bytes(b"x")
    for name, db in [
        ("existing", root / "existing_db"),
        ("under a file", root / "a_file" / "db"),
        ("missing parent", root / "no" / "db"),
        ("link", root / "db_link"),
    ]:
        if name == "link":
            db.symlink_to(root / "elsewhere")
        yield Case("convert_imageset", f"db {name}", ["convert_imageset", f"{root}/", str(lst), str(db)])


def folder_cases(root: Path, files: dict[str, Path], rng: random.Random) -> Iterator[Case]:
    """dataset over class folders that are bad as a whole."""
    good = files["good"].read_bytes()

    def tree(name: str) -> Path:
        top = root / "trees" / name
        top.mkdir(parents=True)
        return top

    trees: list[tuple[str, Path]] = []
    t = tree("loop")
    for c in ("a", "b"):
        (t / c).mkdir()
        for i in range(3):
            (t / c / f"{i}.png").write_bytes(good)
    (t / "a" / "back").symlink_to("..")  # a loop
    (t / "c").symlink_to("c")  # a class that is a loop on itself
    (t / "d").symlink_to(t)  # a class that is the root
    trees.append(("symlink loops", t))
    t = tree("empty")
    trees.append(("no classes", t))
    t = tree("empty classes")
    (t / "a").mkdir()
    (t / "b").mkdir()
    trees.append(("empty classes", t))
    t = tree("one class")
    (t / "a").mkdir()
    for i in range(4):
        (t / "a" / f"{i}.png").write_bytes(good)
    trees.append(("one class", t))
    t = tree("names")
    for c in ("\udcff", "b c", "-x"):
        (t / c).mkdir()
        for i in range(3):
            (t / c / f"{i}.PNG").write_bytes(good)
    trees.append(("non-UTF-8 class names", t))
    t = tree("all bad")
    for c in ("a", "b"):
        (t / c).mkdir()
        for i in range(3):
            (t / c / f"{i}.png").write_bytes(b"")
    trees.append(("all images zero bytes", t))
    t = tree("sizes")
    for c in ("a", "b"):
        (t / c).mkdir()
        for i in range(3):
            (t / c / f"{i}.png").write_bytes(png_bytes(4 + 5 * i, 30 - 7 * i, seed=i))
    trees.append(("mixed sizes", t))
    (root / "trees" / "plain_file").write_bytes(good)
    trees.append(("a file, not a folder", root / "trees" / "plain_file"))
    trees.append(("missing", root / "trees" / "missing"))
    option_sets = [
        [],
        ["--gray", "--encoding", "png"],
        ["--size", "0x0"],
        ["--size", "99999x99999"],
        ["--val", "100"],
        ["--val", "-5"],
        ["--test", "50", "--val", "50"],
        ["--max-per-class", "-1"],
        ["--min-per-class", "0"],
        ["--size", "abc"],
        ["--resize", "fill", "--size", "3x40"],
        ["--val-folder", str(root / "trees" / "loop")],
        ["--seed", "-1"],
        ["--size", "1x1"],
    ]
    n = 0
    for name, top in trees:
        for options in rng.sample(option_sets, 5):
            out = root / f"tree_out{n}"
            n += 1
            yield Case(
                "dataset",
                f"{name} {' '.join(options)}",
                ["dataset", "--quiet", *options, str(top), str(out)],
                [out],
            )
    # the output named where it cannot go
    src = root / "trees" / "sizes"
    (root / "out_exists").mkdir()
    (root / "out_link").symlink_to(root / "out_target")
    (root / "out_loop").symlink_to("out_loop")
    for name, out in [
        ("exists", root / "out_exists"),
        ("a link", root / "out_link"),
        ("a loop", root / "out_loop"),
        ("under a file", files["good"] / "x"),
        ("inside the source", src / "a" / "out"),
        ("the source", src),
        ("missing parent", root / "nope" / "out"),
        ("non-UTF-8", root / "\udcffout"),
    ]:
        before = out.exists() or out.is_symlink()
        yield Case(
            "dataset", f"out {name}", ["dataset", "--quiet", str(src), str(out)], [] if before else [out]
        )
    (root / "force_target").mkdir()
    (root / "force_target" / "keep.txt").write_text("user's")
    yield Case(
        "dataset",
        "--force over a folder",
        ["dataset", "--quiet", "--force", str(src), str(root / "force_target")],
    )


def labels_cases(root: Path, files: dict[str, Path], rng: random.Random) -> Iterator[Case]:
    model = ["--model", str(files["deploy"]), "--weights", str(files["weights"])]
    labels = {
        "empty": b"",
        "one line": b"cat\n",
        "two lines": b"cat\ndog\n",
        "too many": b"".join(b"class %d\n" % i for i in range(50)),
        "binary": bytes(range(256)),
        "non-UTF-8": b"ch\xe9vre\nb\nc\n",
        "NUL": b"a\0\nb\nc\n",
        "blank lines": b"\n\n\n",
        "huge line": b"x" * 1_000_000 + b"\nb\nc\n",
        "CRLF": b"a\r\nb\r\nc\r\n",
        "synset style": b"n01 tench, Tinca\nn02 goldfish\nn03 shark\n",
        "UTF-16": "a\nb\nc\n".encode("utf-16"),
    }
    for i in range(rng.randrange(4, 8)):
        base = bytearray(b"a\nb\nc\n")
        base[rng.randrange(len(base))] = rng.randrange(256)
        labels[f"flipped {i}"] = bytes(base)
    paths = {}
    for n, (name, text) in enumerate(labels.items()):
        paths[name] = root / f"labels{n}.txt"
        paths[name].write_bytes(text)
    for special in ("dir", "fifo", "loop", "dangling"):
        paths[special] = make(root, f"labels_{special}.txt", special)
    paths["missing"] = root / "no_labels.txt"
    data = root / "trees" / "sizes"
    for name, path in paths.items():
        yield Case(
            "labels", f"classify {name}", ["classify", *model, "--labels", str(path), str(files["good"])]
        )
        yield Case(
            "labels",
            f"evaluate {name}",
            ["evaluate", *model, "--labels", str(path), "--data", str(data), "--resize", "6,6"],
        )


def csv_cases(root: Path, files: dict[str, Path], rng: random.Random) -> Iterator[Case]:
    model = ["--model", str(files["deploy"]), "--weights", str(files["weights"])]
    data = root / "trees" / "sizes"
    (root / "csv_dir").mkdir()
    (root / "csv_link").symlink_to(root / "csv_target.csv")
    (root / "csv_loop").symlink_to("csv_loop")
    (root / "csv_existing_link").symlink_to(files["good"])
    os.mkfifo(root / "csv_fifo")
    targets = [
        ("a folder", root / "csv_dir"),
        ("a link", root / "csv_link"),
        ("a loop", root / "csv_loop"),
        ("a link to an image", root / "csv_existing_link"),
        ("a FIFO", root / "csv_fifo"),
        ("missing folder", root / "nowhere" / "m.csv"),
        ("under a file", files["good"] / "m.csv"),
        ("non-UTF-8", root / "\udcffm.csv"),
        ("the weights", files["weights"]),
        ("/proc", Path("/proc/self/m.csv")),
        ("no extension", root / "matrix"),
    ]
    for name, target in targets:
        before = target.exists() or target.is_symlink()
        content = target.read_bytes() if target.is_file() and not target.is_fifo() else None
        argv = ["evaluate", *model, "--data", str(data), "--resize", "6,6", "--csv", str(target)]
        case = Case("evaluate --csv", name, argv, [] if before else [target])
        yield case
        if content is not None and name == "the weights":
            yield Case("evaluate --csv", "the weights again (unchanged?)", argv)


def compare_cases(root: Path, files: dict[str, Path], rng: random.Random) -> Iterator[Case]:
    base = ["compare-init", "--solver", str(files["solver"]), "--iterations", "2", "--test-iter", "1"]
    spellings = [
        "xavier",
        "msra",
        "constant 0",
        "zero=constant 0",
        "gaussian std=0.01",
        "uniform [0,1]",
        "uniform [-0.5,0.5]",
        "=xavier",
        "a=",
        "a==xavier",
        "gaussian std=",
        "gaussian std=abc",
        "gaussian std=-1",
        "gaussian std=nan",
        "gaussian std=inf",
        "gaussian std=1e400",
        "constant",
        "constant 0 1",
        "uniform [1,0]",
        "uniform [0,",
        "uniform 0,1",
        "xavier variance=FAN",
        "xavier variance=AVERAGE",
        "msra variance=fan_out",
        "positive_unitball",
        "bilinear",
        "gaussian sparse=3",
        "gaussian sparse=-3",
        "gaussian mean=1 std=0",
        "unknown",
        "XAVIER",
        " xavier ",
        "x=y=z",
        "\udcff",
        "gaussian std=0.01 std=0.02",
        "constant value=1e38",
        "a=xavier",
        "a=msra",
        "uniform min=2 max=1",
        "",
    ]
    for _ in range(60):
        variants = [rng.choice(spellings) for _ in range(rng.randrange(1, 8))]
        argv = [*base]
        for v in variants:
            argv += ["--variant", v]
        yield Case("compare-init --variant", " | ".join(variants), argv)
    for layers in [
        "conv",
        "conv,ip",
        "nope",
        "",
        ",",
        "conv,,ip",
        "conv,conv",
        "loss",
        "d",
        " conv",
        "\udcff",
    ]:
        yield Case(
            "compare-init --layers",
            repr(layers),
            [*base, "--variant", "xavier", "--variant", "msra", "--layers", layers],
        )
    (root / "cmp_dir").mkdir()
    (root / "cmp_link.json").symlink_to(root / "cmp_target.json")
    (root / "cmp_loop.csv").symlink_to("cmp_loop.csv")
    outs = [
        root / "cmp_dir",
        root / "cmp_link.json",
        root / "cmp_loop.csv",
        root / "curves.txt",
        root / "none" / "c.json",
        files["good"] / "c.csv",
        root / "\udcffc.json",
        Path("/proc/self/c.json"),
        root / "noext",
        root / "ok.csv",
    ]
    for out in outs:
        before = out.exists() or out.is_symlink()
        yield Case(
            "compare-init --out",
            out.name,
            [*base, "--variant", "xavier", "--variant", "msra", "--out", str(out)],
            [] if before else [out],
        )
    for flag, values in [
        ("--iterations", ["0", "-1", "abc", "10000000000"]),
        ("--seed", ["-1", "x", "2**70"]),
        ("--test-interval", ["0", "-3"]),
        ("--test-iter", ["0", "-1"]),
        ("--stats-every", ["0", "-1"]),
    ]:
        for value in values:
            argv = [
                "compare-init",
                "--solver",
                str(files["solver"]),
                "--variant",
                "xavier",
                "--variant",
                "msra",
            ]
            if flag != "--iterations":
                argv += ["--iterations", "2"]
            yield Case("compare-init flags", f"{flag} {value}", [*argv, flag, value])


KINDS: dict[str, Callable[[Path, dict[str, Path], random.Random], Iterator[Case]]] = {
    "images": image_cases,
    "arguments": classify_input_cases,
    "lists": list_cases,
    "folders": folder_cases,
    "labels": labels_cases,
    "csv": csv_cases,
    "compare": compare_cases,
}


# --- running -------------------------------------------------------------------------------------
def run(case: Case) -> Verdict:
    import main

    before = {p: (p.exists() or p.is_symlink()) for p in case.outputs}
    parents = {p.parent for p in case.outputs} | {Path(a).parent for a in case.argv if a.startswith("/tmp")}
    litter_before = {p for d in parents for p in _litter(d)}
    inputs = {
        Path(a): _digest(Path(a)) for a in case.argv if a.startswith("/") and Path(a) not in case.outputs
    }
    # a terminal's streams: stdout refuses what UTF-8 cannot say (a surrogate-escaped name), stderr escapes it
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, "utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_bytes, "utf-8", errors="backslashreplace", write_through=True)
    handlers = _logging_state()

    def hang(*_: object) -> None:
        raise TimeoutError("timed out")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(TIMEOUT_S)
    code: int | None = None
    problem = ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main.main(case.argv)
            except SystemExit as exc:  # argparse: usage and one error line
                code = exc.code if isinstance(exc.code, int) else 2
    except TimeoutError:
        problem = f"hang (no answer in {TIMEOUT_S} s)"
    except BaseException as exc:
        problem = (
            "exception out of main: " + "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1]
        )
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        _restore_logging(handlers)
    err_text, out_text = err_bytes.getvalue().decode(), out_bytes.getvalue().decode()
    lines = err_text.splitlines()
    text = err_text + out_text
    if not problem and "Traceback" in text:
        problem = "a traceback was printed: " + _last_traceback_line(text)
    if not problem and code not in (0, 2):
        problem = f"exit code {code}"
    if not problem and code == 2:
        errors = [line for line in lines if "error" in line.split(":", 1)[0] or line.startswith("error")]
        if not errors or lines[-1] != errors[-1]:
            problem = f"exit 2 without one last error line: {lines[-3:]}"
        elif len([e for e in errors if e.startswith("error:")]) > 1:
            problem = f"several error lines: {errors[-3:]}"
    if not problem:
        changed = [p for p, digest in inputs.items() if digest is not None and _digest(p) != digest]
        if changed:
            problem = f"an input was changed: {changed[0]}"
    if not problem:
        left = {p for d in parents for p in _litter(d)} - litter_before
        if left:
            problem = f"left behind: {sorted(map(str, left))[:3]}"
        elif code:
            made = [p for p, existed in before.items() if not existed and (p.exists() or p.is_symlink())]
            if made:
                problem = f"failed (exit {code}) but wrote {made[0]}"
    return Verdict(case, code, problem, lines[-1] if lines else "")


def _digest(path: Path) -> bytes | None:
    """A regular file's bytes (the inputs here are small), else None."""
    try:
        return path.read_bytes() if path.is_file() and not path.is_symlink() else None
    except OSError:
        return None


def _litter(folder: Path) -> set[Path]:
    try:
        return {
            p for p in folder.iterdir() if p.name.endswith((".partial", ".tmp", ".old")) or ".tmp" in p.name
        }
    except OSError:
        return set()


def _last_traceback_line(text: str) -> str:
    tail = text[text.rfind("Traceback") :].strip().splitlines()
    return tail[-1] if tail else ""


def _logging_state() -> dict[str, tuple[list[logging.Handler], int, bool]]:
    return {
        n: (lg.handlers[:], lg.level, lg.propagate)
        for n in ("engine", "proto")
        for lg in [logging.getLogger(n)]
    }


def _restore_logging(saved: dict[str, tuple[list[logging.Handler], int, bool]]) -> None:
    from engine.cli import glog

    for name, (handlers, level, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate
    glog._installed.clear()


def cases(root: Path, seed: int, only: list[str] | None = None) -> Iterator[Case]:
    rng = random.Random(seed)
    files = setup(root)
    for kind, make_cases in KINDS.items():
        sub = root / kind
        sub.mkdir()
        if kind in ("labels", "csv"):  # these read the class tree "sizes" folder_cases made
            sub = root / "folders"
        for case in make_cases(sub, files, rng):  # generated (files made) even when not run
            if not only or kind in only:
                yield case


def flip_decodes(count: int, seed: int) -> list[str]:
    """``count`` random byte flips of small PNG, JPEG, GIF, BMP, TIFF and PPM files through
    decode_image in each mode: each decodes or is a DataError naming the file, nothing printed."""
    from engine.data.errors import DataError
    from engine.data.images import decode_image

    rng = random.Random(seed)
    rgb = Image.fromarray(np.random.default_rng(seed).integers(0, 256, (9, 7, 3), dtype=np.uint8))
    originals = [encoded(rgb, f) for f in ("PNG", "JPEG", "GIF", "BMP", "TIFF", "PPM")]
    originals.append(encoded(rgb.convert("P"), "PNG"))
    problems = []
    for i in range(count):
        data = bytearray(rng.choice(originals))
        for _ in range(rng.randrange(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                decode_image(bytes(data), rng.choice([None, "gray", "color"]), "f.img")
        except DataError as exc:
            if not str(exc).startswith("f.img: "):
                problems.append(f"flip {i}: {exc}")
        except Exception as exc:  # what we look for
            problems.append(f"flip {i}: {type(exc).__name__}: {exc}")
        if err.getvalue():
            problems.append(f"flip {i}: printed {err.getvalue()[:100]!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--seeds", type=int, default=1, help="rounds of generated cases (random parts differ)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", action="append", choices=sorted(KINDS))
    parser.add_argument("--flips", type=int, default=2000, help="byte-flipped images through decode_image")
    args = parser.parse_args(argv)
    total, failed = 0, []
    for seed in range(args.seed, args.seed + args.seeds):
        with tempfile.TemporaryDirectory() as tmp:
            for case in cases(Path(tmp), seed, args.only):
                verdict = run(case)
                total += 1
                if verdict.problem:
                    failed.append(verdict)
                    name = case.name.encode("utf-8", "backslashreplace").decode()
                    print(f"FAIL [{case.kind}] {name[:80]}: {verdict.problem[:300]}", flush=True)
    flips = flip_decodes(args.flips, args.seed)
    for problem in flips:
        print(f"FAIL [decode] {problem[:300]}")
    print(f"{args.flips} byte-flipped images decoded, {len(flips)} failures")
    kinds: dict[str, int] = {}
    for v in failed:
        kinds[v.case.kind] = kinds.get(v.case.kind, 0) + 1
    print(f"{total} runs, {len(failed)} failures {kinds}")
    return 1 if failed or flips else 0


if __name__ == "__main__":
    sys.exit(main())
