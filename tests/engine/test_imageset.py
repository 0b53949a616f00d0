"""convert_imageset and compute_image_mean: the Datums, keys and means Caffe's tools write, on
images of every kind made here; the flags; bad input as one line, exit 2, nothing left behind."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import lmdb
import numpy as np
import pytest
from PIL import Image

import main
from engine.data.image_mean import channel_means
from engine.data.images import decode_image, resize_bilinear
from engine.testing import blobs, host, make_layer
from proto import caffe_pb2
from tests.engine.imageset_support import bgr, make_images, png_gray

GOLDENS = json.loads((Path(__file__).parent.parent / "data" / "opencv_goldens.json").read_text())


def records(db: Path) -> list[tuple[bytes, caffe_pb2.Datum]]:
    env = lmdb.open(str(db), readonly=True, lock=False)
    with env.begin() as txn:
        out = [(bytes(k), caffe_pb2.Datum.FromString(v)) for k, v in txn.cursor()]
    env.close()
    return out


def convert(tmp_path, lines: list[str], *flags: str, capsys=None) -> tuple[int, Path]:
    listfile = tmp_path / "list.txt"
    listfile.write_text("".join(line + "\n" for line in lines))
    db = tmp_path / "db"
    return main.main(["convert_imageset", *flags, f"{tmp_path / 'img'}/", str(listfile), str(db)]), db


@pytest.fixture
def images(tmp_path) -> dict[str, np.ndarray]:
    return make_images(tmp_path / "img")


KINDS = ["rgb.png", "rgba.png", "gray.png", "palette.png", "image.bmp", "with space.png"]


def test_raw_datums_keys_and_a_missing_file_skipped(tmp_path, images, capsys):
    lines = [f"{name} {i}" for i, name in enumerate(KINDS)]
    lines.insert(2, "missing.png 9")
    rc, db = convert(tmp_path, lines)
    assert rc == 0
    err = capsys.readouterr().err
    assert f"Could not open or find file {tmp_path}/img/missing.png" in err
    got = records(db)
    # Keys are the line's place in the list: the missing file leaves its number unused.
    names = [name for name in KINDS]
    assert [k for k, _ in got] == [
        b"%08d_%s" % (i if i < 2 else i + 1, n.encode()) for i, n in enumerate(names)
    ]
    for i, (name, (_, datum)) in enumerate(zip(names, got)):
        assert (datum.channels, datum.height, datum.width, datum.label) == (3, 5, 7, i)
        assert datum.HasField("encoded") and not datum.encoded  # Caffe sets encoded: false
        np.testing.assert_array_equal(np.frombuffer(datum.data, np.uint8).reshape(3, 5, 7), bgr(images[name]))
    # Field order on the wire is Caffe's: channels, height, width, data, label, encoded.
    wire = got[0][1].SerializeToString()
    assert wire[:6] == bytes([0x08, 3, 0x10, 5, 0x18, 7]) and wire.endswith(bytes([0x28, 0, 0x38, 0]))


def test_gray_flag_decodes_as_imread_grayscale(tmp_path, images):
    rc, db = convert(tmp_path, ["rgb.png 0", "gray.png 1", "palette.png 2"], "--gray")
    assert rc == 0
    got = [d for _, d in records(db)]
    for datum, name in zip(got, ["rgb.png", "gray.png", "palette.png"]):
        assert (datum.channels, datum.height, datum.width) == (1, 5, 7)
        np.testing.assert_array_equal(
            np.frombuffer(datum.data, np.uint8).reshape(5, 7), png_gray(images[name])
        )


def test_resize_needs_both_flags_and_is_inter_linear(tmp_path, images):
    rc, db = convert(tmp_path, ["rgb.png 0"], "-resize_height", "3", "--resize_width=11")
    assert rc == 0
    ((_, datum),) = records(db)
    assert (datum.height, datum.width) == (3, 11)
    want = resize_bilinear(bgr(images["rgb.png"]), 3, 11)
    np.testing.assert_array_equal(np.frombuffer(datum.data, np.uint8).reshape(3, 3, 11), want)
    rc = main.main(["convert_imageset", "-resize_height=3", f"{tmp_path}/img/", str(tmp_path / "list.txt"),
                         str(tmp_path / "db2")])  # fmt: skip
    assert rc == 0 and records(tmp_path / "db2")[0][1].height == 5  # one flag alone: no resize, as Caffe


def test_encoded_keeps_the_files_own_bytes_unless_it_must_reencode(tmp_path, images):
    rc, db = convert(tmp_path, ["rgb.png 0", "photo.jpg 1", "image.bmp 2"], "--encoded")
    assert rc == 0
    got = [d for _, d in records(db)]
    for datum, name in zip(got, ["rgb.png", "photo.jpg", "image.bmp"]):
        assert datum.encoded and datum.data == (tmp_path / "img" / name).read_bytes()
        assert not datum.HasField("channels")  # Caffe's ReadFileToDatum sets data, label, encoded only
    flags = ["--encoded", "-encode_type=png", "--resize_height=4", "--resize_width=4"]
    rc = main.main(
        ["convert_imageset", *flags, f"{tmp_path}/img/", str(tmp_path / "list.txt"), str(tmp_path / "db_png")]
    )
    assert rc == 0
    for (_, datum), name in zip(records(tmp_path / "db_png"), ["rgb.png", "photo.jpg", "image.bmp"]):
        assert datum.data.startswith(b"\x89PNG")
        if name != "photo.jpg":
            want = resize_bilinear(bgr(images[name]), 4, 4)
            np.testing.assert_array_equal(decode_image(datum.data, "color"), want)


def test_encode_type_alone_implies_encoded_and_converts(tmp_path, images, capsys):
    rc, db = convert(tmp_path, ["rgb.png 0", "photo.jpg 1"], "--encode_type", "jpg")
    assert rc == 0
    assert "encode_type specified, assuming encoded=true." in capsys.readouterr().err
    png, jpg = [d for _, d in records(db)]
    assert png.encoded and png.data.startswith(b"\xff\xd8")  # the PNG re-encoded as JPEG
    assert jpg.data == (tmp_path / "img" / "photo.jpg").read_bytes()  # already a JPEG: its own bytes


def test_shuffle_keeps_each_key_with_its_line(tmp_path, images):
    names = KINDS * 3
    lines = [f"{name} {i}" for i, name in enumerate(names)]
    rc, db = convert(tmp_path, lines, "--shuffle")
    assert rc == 0
    got = records(db)
    assert len(got) == len(names)
    prefixes = sorted(int(k[:8]) for k, _ in got)
    assert prefixes == list(range(len(names)))  # keys number the shuffled list
    labels = [d.label for _, d in got]
    assert sorted(labels) == list(range(len(names)))
    assert labels != list(range(len(names)))  # 18! orders: the identity is not drawn
    for key, datum in got:
        assert key[9:].decode() == names[datum.label]


def test_the_lmdb_reads_back_through_the_data_layer_in_bgr(tmp_path, images):
    rc, db = convert(tmp_path, ["rgb.png 4", "image.bmp 5"])
    assert rc == 0
    layer = make_layer(f'name: "d" type: "Data" top: "data" top: "label" '
                       f'data_param {{ source: "{db}" batch_size: 2 backend: LMDB }}', np)  # fmt: skip
    top = blobs(2, np)
    layer.setup([], top)
    layer.forward([], top)
    np.testing.assert_array_equal(
        host(top[0].data), np.stack([bgr(images["rgb.png"]), bgr(images["image.bmp"])])
    )
    np.testing.assert_array_equal(host(top[1].data), [4, 5])


def test_compute_image_mean_file_and_lines(tmp_path, images, capsys):
    rc, db = convert(tmp_path, [f"{n} 0" for n in ["rgb.png", "rgba.png", "image.bmp"]])
    out = tmp_path / "mean.binaryproto"
    assert main.main(["compute_image_mean", "-backend", "lmdb", str(db), str(out)]) == 0
    blob = caffe_pb2.BlobProto.FromString(out.read_bytes())
    assert (blob.num, blob.channels, blob.height, blob.width) == (1, 3, 5, 7)
    want = np.mean([bgr(images[n]).astype(np.float64) for n in ["rgb.png", "rgba.png", "image.bmp"]], axis=0)
    # Caffe sums in float32 and divides in float32: a few ulps of 255 from the float64 mean.
    np.testing.assert_allclose(np.asarray(blob.data).reshape(3, 5, 7), want, rtol=0, atol=1e-4)
    err = capsys.readouterr().err
    assert "Number of channels: 3" in err
    for c, value in enumerate(channel_means(blob)):
        assert f"mean_value channel [{c}]:{value:g}" in err
        assert value == pytest.approx(want[c].mean(), abs=1e-3)  # float32 running sum over 35 values


def test_compute_image_mean_decodes_encoded_records(tmp_path, images):
    rc, db = convert(tmp_path, ["rgb.png 0", "gray.png 1"], "--encoded")
    out = tmp_path / "mean.binaryproto"
    assert (
        main.main(["compute_image_mean", str(db), str(out)]) == 2
    )  # gray decodes to 1 channel: sizes differ
    assert not out.exists()


def test_check_size_over_mixed_sizes_is_one_line_and_leaves_nothing(tmp_path, images, capsys):
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(tmp_path / "img" / "small.png")
    rc, db = convert(tmp_path, ["rgb.png 0", "small.png 1"], "--check_size")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err[-1].startswith("error: convert_imageset: Incorrect data field size 48")
    assert not db.exists() and list(tmp_path.glob(".db*")) == []
    rc, db = convert(
        tmp_path, ["rgb.png 0", "small.png 1"], "--check_size", "--resize_height=4", "-resize_width=4"
    )
    assert rc == 0 and len(records(db)) == 2


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "names no images"),
        ("\n\n  \n", "names no images"),
        ("rgb.png\n", "list.txt:1: expected 'PATH LABEL'"),
        ("rgb.png 0\nrgb.png cat\n", "list.txt:2: expected 'PATH LABEL'"),
        ("rgb.png 99999999999\n", "does not fit in 32 bits"),
        ("x" * 100000 + "\n", "list.txt:1: expected 'PATH LABEL'"),
        ("\x00\xff\xfe junk\x01\n", "list.txt:1: expected 'PATH LABEL'"),
    ],
)
def test_bad_lists_are_one_line_and_exit_2(tmp_path, images, capsys, content, message):
    (tmp_path / "list.txt").write_bytes(content.encode("latin-1"))
    rc = main.main(["convert_imageset", f"{tmp_path}/img/", str(tmp_path / "list.txt"), str(tmp_path / "db")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and message in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "db").exists()


def test_odd_names_are_skipped_cleanly_or_found(tmp_path, images, capsys):
    raw = b"caf\xe9.png"  # not UTF-8: Linux names are bytes, and Caffe opens them as such
    os.link(tmp_path / "img" / "rgb.png", os.fsencode(tmp_path / "img") + b"/" + raw)
    lines = raw + b" 3\n" + b"a\x00b.png 1\n" + b"y" * 5000 + b".png 2\n" + b"\xff\xfe.png 4\n"
    (tmp_path / "list.txt").write_bytes(lines)
    rc = main.main(["convert_imageset", f"{tmp_path}/img/", str(tmp_path / "list.txt"), str(tmp_path / "db")])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err and err.count("Could not open or find file") == 3
    ((key, datum),) = records(tmp_path / "db")
    assert key == b"00000000_" + raw and datum.label == 3


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--backend=leveldb"], "only lmdb"),
        (["--resize_height=abc"], "illegal value 'abc' specified for int32 flag 'resize_height'"),
        (["--gray=maybe"], "illegal value 'maybe' specified for bool flag 'gray'"),
        (["--colour"], "unknown command line flag 'colour'"),
        (["--encode_type=gif"], "cannot encode images as '.gif'"),
    ],
)
def test_bad_flags_are_one_line(tmp_path, images, capsys, flags, message):
    (tmp_path / "list.txt").write_text("rgb.png 0\n")
    rc = main.main(
        ["convert_imageset", *flags, f"{tmp_path}/img/", str(tmp_path / "list.txt"), str(tmp_path / "db")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and message in err[-1] and not (tmp_path / "db").exists()


def test_boolean_flag_spellings(tmp_path, images):
    for i, flags in enumerate(
        [["-gray"], ["--gray=true"], ["-gray=1"], ["--gray", "--nogray"], ["--gray=false"]]
    ):
        (tmp_path / "list.txt").write_text("rgb.png 0\n")
        db = tmp_path / f"db{i}"
        assert (
            main.main(["convert_imageset", *flags, f"{tmp_path}/img/", str(tmp_path / "list.txt"), str(db)])
            == 0
        )
        assert records(db)[0][1].channels == (1 if i < 3 else 3)


def test_existing_db_is_refused(tmp_path, images, capsys):
    (tmp_path / "db").mkdir()
    rc, _ = convert(tmp_path, ["rgb.png 0"])
    assert rc == 2 and "already exists" in capsys.readouterr().err


@pytest.mark.parametrize("case", range(len(GOLDENS["resize"])))
def test_resize_is_opencv_bit_for_bit(case):
    """Pixels cv2.resize (INTER_LINEAR, opencv-python-headless 5.1) gave for these inputs."""
    golden = GOLDENS["resize"][case]
    image = np.asarray(golden["bgr_chw"], np.uint8)
    want = np.asarray(golden["resized"], np.uint8)
    np.testing.assert_array_equal(resize_bilinear(image, *want.shape[1:]), want)


@pytest.mark.parametrize("fmt", ["png", "bmp"])
def test_gray_decoding_is_opencv_bit_for_bit(fmt):
    rgb = np.asarray(GOLDENS["gray"]["rgb_hwc"], np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format=fmt)
    np.testing.assert_array_equal(
        decode_image(buffer.getvalue(), "gray")[0], np.asarray(GOLDENS["gray"][fmt])
    )


def test_encoded_without_an_extension_keeps_the_bytes_or_stops(tmp_path, images, capsys):
    (tmp_path / "img" / "noext").write_bytes((tmp_path / "img" / "rgb.png").read_bytes())
    rc, db = convert(tmp_path, ["noext 0"], "--encoded")
    assert rc == 0 and "Failed to guess the encoding of 'noext'" in capsys.readouterr().err
    assert (
        records(db)[0][1].data == (tmp_path / "img" / "noext").read_bytes()
    )  # as Caffe: the name matches itself
    flags = ["--encoded", "--resize_height=2", "--resize_width=2"]
    rc = main.main(
        ["convert_imageset", *flags, f"{tmp_path}/img/", str(tmp_path / "list.txt"), str(tmp_path / "d2")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and "cannot encode images as '.noext'" in err[-1] and not (tmp_path / "d2").exists()


def test_jpeg_decodes_to_bgr_and_to_its_luma(tmp_path, images):
    rc, db = convert(tmp_path, ["photo.jpg 0"])
    rc_gray = main.main(
        ["convert_imageset", "--gray", f"{tmp_path}/img/", str(tmp_path / "list.txt"), str(tmp_path / "g")]
    )
    assert rc == 0 and rc_gray == 0
    (_, colour), (_, gray) = records(db)[0], records(tmp_path / "g")[0]
    pixels = np.frombuffer(colour.data, np.uint8).reshape(3, 5, 7).astype(int)
    # JPEG is lossy: a flat colour comes back within a few levels (libjpeg's rounding and chroma).
    assert np.abs(pixels - np.array([90, 40, 200])[:, None, None]).max() <= 3  # BGR of RGB (200, 40, 90)
    luma = 0.299 * 200 + 0.587 * 40 + 0.114 * 90  # what libjpeg hands OpenCV for IMREAD_GRAYSCALE
    assert gray.channels == 1 and np.abs(np.frombuffer(gray.data, np.uint8) - luma).max() <= 3
