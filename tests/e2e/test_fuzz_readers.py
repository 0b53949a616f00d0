"""#30's fuzzing pass over the readers issues 24-26 added (bench/fuzz_readers.py): a sample of its
generated bad inputs, each run judged as the campaign judges it (one error line last and exit 2, or
per-item skip lines; no traceback, no hang, nothing half-written, no input changed), and a
regression test for each failure the campaign found."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import main
from bench import fuzz_readers as fuzz
from engine.data.errors import DataError
from engine.data.images import MAX_PIXELS, decode_image
from engine.experiments import filler_spec


@pytest.fixture(autouse=True)
def _logging_kept():
    saved = fuzz._logging_state()
    yield
    fuzz._restore_logging(saved)


def test_a_sample_of_the_campaign_behaves(tmp_path) -> None:
    """One case in six of every kind (seed 3): ~80 runs of the campaign's 467."""
    seen: dict[str, int] = {}
    verdicts = []
    for case in fuzz.cases(tmp_path, 3):
        seen[case.kind] = seen.get(case.kind, -1) + 1
        if seen[case.kind] % 6 == 0:  # every kind's first case, then one in six
            verdicts.append(fuzz.run(case))
    assert len(verdicts) > 60
    assert {v.case.kind for v in verdicts} >= {
        "classify",
        "convert_imageset",
        "dataset",
        "labels",
        "evaluate",
    }
    assert [f"{v.case.kind} {v.case.name}: {v.problem}" for v in verdicts if v.problem] == []


def test_the_judge_catches_a_changed_input_and_a_traceback(tmp_path, monkeypatch) -> None:
    """The campaign's judge is not blind: an input overwritten, or an exception, is a failure."""
    victim = tmp_path / "w.caffemodel"
    victim.write_bytes(b"weights")

    def overwrite(argv):
        Path(argv[1]).write_bytes(b"csv")
        return 0

    monkeypatch.setattr(main, "main", overwrite)
    assert "an input was changed" in fuzz.run(fuzz.Case("k", "n", ["x", str(victim)])).problem
    monkeypatch.setattr(main, "main", lambda argv: 1 / 0)
    assert "ZeroDivisionError" in fuzz.run(fuzz.Case("k", "n", ["x"])).problem


# --- regressions: one per failure the campaign found ---------------------------------------------
def run(capsys, *argv: str) -> tuple[int, list[str]]:
    code = main.main(list(argv))
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("I1")]
    return code, err


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (
            fuzz.png_header_only(100_000, 100_000),
            "claims 10,000,000,000 pixels, past Pillow's limit of 178,956,970",
        ),
        (
            fuzz.png_header_only(9000, 9000),
            "claims 9,000 x 9,000 pixels, past the limit of 67,108,864 (8192 x 8192) for one",
        ),
        (b"", "cannot decode the image: an empty file"),
        (b"text", "not an image in a format we read"),  # was "cannot identify image file <_io.BytesIO ...>"
    ],
    ids=["past-pillow-limit", "past-ours", "empty", "text"],
)
def test_images_refused_in_words_before_decoding(data, words) -> None:
    with pytest.raises(DataError, match="x.png: ") as caught:
        decode_image(data, None, "x.png")
    assert words in str(caught.value) and "BytesIO" not in str(caught.value)
    if "claims" in words:
        assert str(caught.value).endswith("refused before decoding it (a decompression bomb?)")
    assert MAX_PIXELS == 8192 * 8192


def test_a_decompression_bomb_in_a_class_folder_is_skipped_not_decoded(tmp_path, capsys) -> None:
    """A real 12,000 x 12,000 PNG of zeros (144 M pixels, 0.2 MB): was decoded (5 s, 430 MB)."""
    for c in ("a", "b"):
        (tmp_path / "in" / c).mkdir(parents=True)
        for i in range(2):
            (tmp_path / "in" / c / f"{i}.png").write_bytes(fuzz.png_bytes(6, 6, seed=i))
    (tmp_path / "in" / "a" / "0bomb.png").write_bytes(fuzz.png_bomb(12_000))  # sorted first
    code, err = run(capsys, "dataset", "--quiet", "--val", "50", str(tmp_path / "in"), str(tmp_path / "out"))
    assert code == 0
    assert "6x6x3" in err[0]  # the size is not the bomb's
    assert [line for line in err if "0bomb.png" in line and "12,000 x 12,000 pixels, past the limit" in line]


def make_model(tmp_path: Path) -> list[str]:
    import engine as caffe

    (tmp_path / "deploy.prototxt").write_text(fuzz.DEPLOY)
    caffe.Net(str(tmp_path / "deploy.prototxt"), caffe.TEST).save(str(tmp_path / "w.caffemodel"))
    return ["--model", str(tmp_path / "deploy.prototxt"), "--weights", str(tmp_path / "w.caffemodel")]


def test_classify_skips_a_bad_image_and_ends_with_one_error_line(tmp_path, capsys) -> None:
    model = make_model(tmp_path)
    (tmp_path / "good.png").write_bytes(fuzz.png_bytes(8, 8))
    (tmp_path / "bad.png").write_bytes(b"")
    code, err = run(
        capsys, "classify", *model, "--center-only", str(tmp_path / "good.png"), str(tmp_path / "bad.png")
    )
    assert code == 2
    assert [line for line in err if line.startswith("error")] == ["error: 1 of 2 image(s) could not be read"]
    assert err[-1].startswith("error") and any(
        line.startswith("skipped: ") and "bad.png" in line for line in err
    )


def test_evaluate_skips_missing_and_nul_names_then_says_so_last(tmp_path, capsys) -> None:
    """An image list with missing files and a NUL in a name: was a ValueError traceback (NUL), and
    error lines per image with the progress line last."""
    model = make_model(tmp_path)
    (tmp_path / "g.png").write_bytes(fuzz.png_bytes(8, 8))
    listing = tmp_path / "list.txt"
    listing.write_bytes(b"g.png 0\nmissing.png 1\ng\0.png 1\ng.png 1\n")
    code, err = run(capsys, "evaluate", *model, "--data", str(listing), "--resize", "6,6")
    assert code == 2
    assert err[-1] == "error: 2 of 4 image(s) could not be read"
    assert len([line for line in err if line.startswith("skipped: ")]) == 2


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--seed", "-1"], "--seed -1: expected 0 or more"),  # was numpy's ValueError
        (["--size", "99999x99999"], "--size 99999x99999: expected 1 to 67,108,864 pixels"),  # was MemoryError
    ],
)
def test_dataset_settings_refused_in_one_line(tmp_path, capsys, args, words) -> None:
    for c in ("a", "b"):
        (tmp_path / "in" / c).mkdir(parents=True)
        for i in range(2):
            (tmp_path / "in" / c / f"{i}.png").write_bytes(fuzz.png_bytes(6, 6, seed=i))
    code, err = run(capsys, "dataset", "--quiet", *args, str(tmp_path / "in"), str(tmp_path / "out"))
    assert (code, err[-1]) == (2, f"error: {words}") or (code == 2 and err[-1].startswith(f"error: {words}"))
    assert not (tmp_path / "out").exists()


def test_dataset_keeps_non_utf8_names(tmp_path, capsys) -> None:
    """A class folder and an output folder whose names are not UTF-8: were UnicodeEncodeErrors
    (labels.txt, the LMDB's path); labels.txt keeps the folder's bytes, classify reads it."""
    import os

    src = tmp_path / "in"
    for c in (b"\xffcat", b"dog"):
        folder = src / os.fsdecode(c)
        folder.mkdir(parents=True)
        for i in range(2):
            (folder / f"{i}.png").write_bytes(fuzz.png_bytes(6, 6, seed=i))
    out = Path(os.fsdecode(bytes(tmp_path) + b"/set\xfe"))
    code, _ = run(capsys, "dataset", "--quiet", "--val", "50", str(src), str(out))
    assert code == 0
    assert (out / "labels.txt").read_bytes() == b"dog\n\xffcat\n"  # sorted as Python sorts the names
    assert (out / "train_lmdb" / "data.mdb").is_file()
    from engine.model_use.classify import read_labels

    assert read_labels(out / "labels.txt", 2) == ["dog", "\ufffdcat"]  # shown, U+FFFD for the byte


def test_evaluate_csv_onto_an_input_or_proc_refused_before_evaluating(tmp_path, capsys) -> None:
    """--csv naming the weights overwrote them (exit 0); /proc/self/x.csv failed only after the work."""
    model = make_model(tmp_path)
    (tmp_path / "g.png").write_bytes(fuzz.png_bytes(8, 8))
    (tmp_path / "list.txt").write_text("g.png 0\n")
    weights = (tmp_path / "w.caffemodel").read_bytes()
    argv = ["evaluate", *model, "--data", str(tmp_path / "list.txt"), "--resize", "6,6", "--csv"]
    code, err = run(capsys, *argv, str(tmp_path / "w.caffemodel"))
    assert code == 2 and "it is an input" in err[-1] and len(err) == 1
    assert (tmp_path / "w.caffemodel").read_bytes() == weights
    code, err = run(capsys, *argv, "/proc/self/m.csv")
    assert code == 2 and err == [err[-1]] and "no file can be created in /proc/self" in err[-1]


def test_compare_init_iterations_past_caffes_int_in_one_line(tmp_path, capsys) -> None:
    (tmp_path / "train.prototxt").write_text(fuzz.TRAIN)
    (tmp_path / "solver.prototxt").write_text(fuzz.SOLVER)
    code, err = run(capsys, "compare-init", "--solver", str(tmp_path / "solver.prototxt"),
                    "--variant", "xavier", "--variant", "msra", "--iterations", "10000000000")  # fmt: skip
    assert code == 2 and err[-1] == "error: iterations must be 1 to 2,147,483,647, got 10000000000"


@pytest.mark.parametrize(
    ("spelling", "means"),
    [
        ("uniform [0,1]", "uniform min=0 max=1"),  # the help's own spelling was refused
        ("uniform [-0.5, 0.5]", "uniform min=-0.5 max=0.5"),
        ("XAVIER", "xavier"),
        ("msra variance_norm=fan_out", "msra variance_norm=FAN_OUT"),
    ],
)
def test_variant_spellings(spelling, means) -> None:
    assert filler_spec.describe(filler_spec.parse(spelling)) == means


def test_random_byte_flips_never_escape_decode_image(capfd) -> None:
    """400 seeded flips of PNG, JPEG, GIF, BMP, TIFF and PPM files: each decodes or is a DataError
    naming the file, and nothing is printed (were: SyntaxError "broken PNG file" out of Pillow,
    Pillow's warnings and its "More samples per pixel" log line on stderr)."""
    assert fuzz.flip_decodes(400, seed=0) == []
    assert capfd.readouterr().err == ""


def test_classify_arguments_that_are_not_images(tmp_path) -> None:
    """An empty folder was 'Classifying 0 image(s)', exit 0; a FIFO (or /dev/zero) given as a list
    was read forever; a Latin-1 list was a UnicodeDecodeError's repr. Run under the campaign's alarm."""
    model = make_model(tmp_path)
    (tmp_path / "empty").mkdir()
    os.mkfifo(tmp_path / "list.txt")
    (tmp_path / "latin1.lst").write_bytes(b"ch\xe8vre.png 0\n")
    words = {
        "empty": "the folder holds no image (",
        "list.txt": "cannot read the list: it is a FIFO (named pipe), not a regular file",
        "latin1.lst": "cannot read the list: not UTF-8 text (invalid continuation byte at byte 2)",
    }
    for name, said in words.items():
        case = fuzz.Case("classify", name, ["classify", *model, str(tmp_path / name)])
        verdict = fuzz.run(case)
        assert (verdict.code, verdict.problem) == (2, "")
        assert said in verdict.last_line
