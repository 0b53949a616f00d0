"""``main.py draw``: the editor's picture as PNG or SVG, without a window."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET

from graph_view_support import EXAMPLES, FORK, write

import main


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_draw_writes_a_png(tmp_path, capsys):
    out = tmp_path / "lenet.png"
    assert main.main(["draw", str(EXAMPLES / "mnist" / "lenet.prototxt"), str(out)]) == 0
    width, height = _png_size(out)
    assert height > width > 200  # a tall picture: LeNet drawn bottom to top
    assert "9 layers" in capsys.readouterr().out


def test_draw_writes_an_svg_with_the_split_overlay_in_test_phase(tmp_path, capsys):
    out = tmp_path / "fork.svg"
    net = write(tmp_path, FORK, "fork.prototxt")
    assert main.main(["draw", str(net), str(out), "--splits", "--phase", "TEST"]) == 0
    root = ET.parse(out).getroot()
    assert root.tag.endswith("svg")
    text = out.read_text()
    for word in ("conv_a", "Eltwise", "data_input_0_split", "2×4×6×6"):
        assert word in text  # names, types and shapes are text in the SVG, searchable
    assert "6 layers" in capsys.readouterr().out


def test_draw_reports_problems_and_still_draws(tmp_path, capsys):
    """An error-severity problem: the picture is written (it helps most then) and the exit code is 2
    (issue 30 case 10), so a script can tell a net Caffe refuses."""
    net = write(tmp_path, FORK.replace('bottom: "conv_b" top: "sum"', 'bottom: "nope" top: "sum"'))
    out = tmp_path / "broken.png"
    assert main.main(["draw", str(net), str(out)]) == 2
    assert out.is_file()
    assert "error: sum: bottom 'nope' is not produced by any layer in TRAIN" in capsys.readouterr().err


def test_draw_refuses_bad_input(tmp_path, capsys):
    assert main.main(["draw", str(EXAMPLES / "mlp.prototxt"), str(tmp_path / "x.jpg")]) == 2
    assert "must end in .png or .svg" in capsys.readouterr().err
    assert main.main(["draw", str(tmp_path / "missing.prototxt"), str(tmp_path / "x.png")]) == 2
    assert "error:" in capsys.readouterr().err and not (tmp_path / "x.png").exists()


def test_a_very_tall_net_draws_at_a_size_a_viewer_shows(tmp_path, capsys):
    """ResNet-152 (671 layers): the long side capped, about one pixel a scene unit, compressed."""
    from bench.graph_scale import resnet152
    from proto.textio import net_to_text

    net = write(tmp_path, net_to_text(resnet152(1)), "resnet152.prototxt")
    out = tmp_path / "resnet152.png"
    assert main.main(["draw", str(net), str(out)]) == 0
    width, height = _png_size(out)
    assert 10_000 <= height <= 12_000 and width < height / 10
    assert out.stat().st_size < 4_000_000  # compressed (unfiltered it would be ~15 MB)
    assert "671 layers" in capsys.readouterr().out
