"""How ``main.py draw`` writes and what ``draw`` and ``shapes`` exit with (issue 30 case 10, issue 32
case 2): the picture is made in memory and written by proto.atomic, so a link planted at the output
is refused (QImage.save and QSvgGenerator wrote through it), a name that is not UTF-8 is written as
its bytes (it was written with U+FFFD in their place), and a net with an error-severity problem
exits 2 from both commands (after the table, after the picture)."""

from __future__ import annotations

import os

from graph_view_support import FORK, write

import main

BROKEN = FORK.replace('bottom: "conv_b" top: "sum"', 'bottom: "nope" top: "sum"')


def test_a_link_at_the_output_is_refused_and_its_target_untouched(tmp_path, capsys):
    net = write(tmp_path, FORK)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file")
    for name in ("pic.png", "pic.svg"):
        os.symlink(victim, tmp_path / name)
        assert main.main(["draw", str(net), str(tmp_path / name)]) == 2
        assert capsys.readouterr().err.splitlines() == [
            f"error: cannot write {tmp_path / name}: it is a symbolic link (to {victim}); "
            "refusing to write through it"
        ]
    assert victim.read_text() == "the user's file"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_name_that_is_not_utf8_is_written_as_its_bytes(tmp_path, capsys):
    net = write(tmp_path, FORK)
    raw = os.fsencode(str(tmp_path)) + b"/pic\xff\xfe.svg"
    name = os.fsdecode(raw)  # as Python hands the argument over: surrogate escapes
    assert main.main(["draw", str(net), name]) == 0
    assert b"pic\xff\xfe.svg" in os.listdir(os.fsencode(str(tmp_path)))
    assert not [n for n in os.listdir(tmp_path) if "\ufffd" in n]
    with open(raw, "rb") as f:
        assert f.read().lstrip().startswith(b"<?xml")
    out = capsys.readouterr().out
    assert out.startswith(f"Wrote {tmp_path}/pic\\xff\\xfe.svg (")


def test_draw_exits_2_after_the_picture_when_a_layer_has_an_error(tmp_path, capsys):
    net = write(tmp_path, BROKEN)
    assert main.main(["draw", str(net), str(tmp_path / "b.svg")]) == 2
    assert (tmp_path / "b.svg").is_file()
    assert main.main(["draw", str(write(tmp_path, FORK, "ok.prototxt")), str(tmp_path / "ok.svg")]) == 0


def test_shapes_exits_2_after_the_table_when_a_layer_cannot_be_shaped(tmp_path, capsys):
    huge = FORK.replace("dim: 2 dim: 3 dim: 8 dim: 8", f"dim: {2**40} dim: 3 dim: 8 dim: 8")
    assert main.main(["shapes", str(write(tmp_path, huge))]) == 2
    captured = capsys.readouterr()
    assert "exceeds the limit" in captured.err
    assert captured.out.splitlines()[0].split() == ["name", "type", "tops", "params", "FLOPs"]
    assert main.main(["shapes", str(write(tmp_path, BROKEN, "broken.prototxt"))]) == 2
    assert main.main(["shapes", str(write(tmp_path, FORK, "fine.prototxt"))]) == 0
