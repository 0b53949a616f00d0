"""#32 case 11 and #30 case 8: big nets on the command line. ``shapes`` finds an in-place layer's band
by its key, not by searching its host's list (20,000 in-place layers took 5.8 s, 50,000 36 s);
``draw`` refuses, in one line naming the limit, a picture past ``MAX_BOXES`` boxes before a scene is
made (30,000 boxes took 2.9 GB and crashed the renderer) and a PNG that would shrink below
``MIN_SCALE`` to fit (a 20,000-layer chain came out 1x12000 px), suggesting SVG. The limits are
injected small here so that the nets stay small."""

from __future__ import annotations

import pytest

import main
from graph_view import render
from graph_view.cli_shapes import table
from graph_view.graph import box_count, build
from proto import caffe_pb2
from proto.textio import parse_net

INPUT = 'layer { name: "d" type: "Input" top: "x0" input_param { shape { dim: 1 dim: 4 } } }\n'


def wide(n: int) -> str:
    """One Input feeding ``n`` ReLUs side by side."""
    return (
        'name: "wide"\n'
        + INPUT
        + "".join(f'layer {{ name: "r{i}" type: "ReLU" bottom: "x0" top: "y{i}" }}\n' for i in range(n))
    )


def chain(n: int, in_place: bool = False) -> str:
    """``n`` ReLUs one after another (all on ``x0`` when ``in_place``)."""
    blob = (lambda i: "x0") if in_place else (lambda i: f"x{i}")
    return (
        'name: "chain"\n'
        + INPUT
        + "".join(
            f'layer {{ name: "r{i}" type: "ReLU" bottom: "{blob(i)}" top: "{blob(i + 1)}" }}\n'
            for i in range(n)
        )
    )


class _NoSearch(list):
    def __iter__(self):
        raise AssertionError("a band was looked for by searching its host's list")


def test_in_place_layers_are_found_by_key(capsys):
    graph = build(parse_net(chain(2000, in_place=True)), caffe_pb2.TRAIN)
    host = graph.nodes["d"]
    assert [b.key for b in host.bands] == [f"r{i}" for i in range(2000)]
    assert graph.band("r1234") is host.bands[1234] and graph.index_of("r1234") == 1235
    host.bands = _NoSearch(host.bands)  # the table looks each band up: by key, never by a search
    lines = table(graph)
    assert lines[-1] == "total: 0 params, 8000 FLOPs per image"
    assert lines[1 + 1235].split() == ["r1234", "ReLU", "1x4", "0", "4"]


def test_box_count_is_what_build_draws():
    for text in (wide(30), chain(30), chain(30, in_place=True)):
        net = parse_net(text)
        assert box_count(net) == len(build(net).nodes)


@pytest.mark.parametrize("ext", ["png", "svg"])
def test_a_net_past_the_box_limit_is_refused_before_a_scene_is_made(tmp_path, capsys, monkeypatch, ext):
    monkeypatch.setattr(render, "MAX_BOXES", 50)  # the real limit is 5,000
    made: list[int] = []
    monkeypatch.setattr(render, "make_scene", lambda *a, **k: made.append(1))
    net, out = tmp_path / "wide.prototxt", tmp_path / f"wide.{ext}"
    net.write_text(wide(60))
    assert main.main(["draw", str(net), str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: cannot draw {out}: {net} has 61 boxes, more than a picture can show (50); "
        "`main.py shapes` lists every layer"
    ]
    assert not out.exists() and made == []


def test_a_wide_net_within_the_limits_is_drawn(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(render, "MAX_BOXES", 100)
    net, out = tmp_path / "wide.prototxt", tmp_path / "wide.png"
    net.write_text(wide(99))  # 100 boxes: exactly at the limit
    assert main.main(["draw", str(net), str(out)]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"Wrote {out} (") and "100 layers, 100 boxes, 0 problems" in said
    assert out.stat().st_size > 0


def test_a_png_too_long_to_read_is_refused_and_svg_draws_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(render, "MAX_SIDE", 1000)  # the real limit is 12,000 px a side
    net = tmp_path / "chain.prototxt"
    net.write_text(chain(150))
    png, svg = tmp_path / "chain.png", tmp_path / "chain.svg"
    assert main.main(["draw", str(net), str(png)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"error: cannot draw {png}: a readable PNG of this net would be "
    )
    assert err[0].endswith(
        "past the limit of 1,000 px a side and 24 megapixels; draw it as .svg, or without the Split layers"
    )
    assert not png.exists()
    assert main.main(["draw", str(net), str(svg)]) == 0
    assert svg.stat().st_size > 0


def test_the_png_scale_shrinks_to_fit_and_stops_at_the_readable_minimum():
    from PySide6.QtCore import QRectF

    assert render.png_scale(QRectF(0, 0, 500, 300)) == 2.0
    assert render.png_scale(QRectF(0, 0, 200, 24_000)) == pytest.approx(0.5)  # 12,000 px / 24,000 units
    assert render.png_scale(QRectF(0, 0, 200, 48_000)) == pytest.approx(render.MIN_SCALE)
    with pytest.raises(render.PictureTooLarge, match="50x12,500 px"):
        render.png_scale(QRectF(0, 0, 200, 50_000))
