"""#30 case 2 and #32 case 10: a prototxt nested thousands of blocks deep, and a file too large to
read whole, end in one line naming the file (exit 2 on the command line), never a RecursionError or
a MemoryError. The layout sidecar's deep JSON is held in tests/graph_view/test_graph_sidecar_reading.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

import pytest
from google.protobuf.descriptor import Descriptor

import main
from app import netio
from engine.data.errors import DataError
from engine.data.hdf5_source import read_file_list
from engine.data.image_list import read_list
from proto import binaryio, caffe_pb2, depth, inputs, textio
from proto.errors import FormatError

DEPTH = 3000
HEAD = 'name: "x"\nlayer {\n  name: "d" type: "Input" top: "data" input_param { shape { dim: 1 } }\n'


def _deep_net(block: str = "include") -> str:
    return HEAD + f"{block} {{\n" * DEPTH + "}\n" * DEPTH + "}\n"


@pytest.mark.parametrize("block", ["include", "fork_only_field", "input_param"])
def test_a_deeply_nested_net_is_refused_in_one_line(block):
    with pytest.raises(FormatError) as caught:
        textio.parse_net(_deep_net(block), "deep.prototxt")
    assert str(caught.value).startswith("deep.prototxt:")
    assert f"nested more than {depth.MAX_DEPTH} deep" in str(caught.value)
    assert caught.value.line == 3 + depth.MAX_DEPTH  # layer { is the first level; this block goes one past


def test_a_deeply_nested_solver_is_refused():
    text = "base_lr: 0.1\n" + "train_state {\n" * DEPTH + "}\n" * DEPTH
    with pytest.raises(FormatError, match="nested more than"):
        textio.parse_solver(text, "solver.prototxt")


def test_braces_in_strings_and_comments_do_not_count():
    many = "{" * (2 * depth.MAX_DEPTH)
    text = f'name: "{many}"\n# {many}\nlayer {{ name: \'{many}\' type: "ReLU" }}\n'
    assert textio.parse_net(text).layer[0].name == many
    assert depth.too_deep("a { b { c { } } }", limit=2) == (1, 11)
    assert depth.too_deep("a { b { } } c { d { } }", limit=2) is None


def test_the_app_prototxt_tab_parse_refuses_it(tmp_path):
    # The Prototxt tab and File > Open read through netio.load_net
    with pytest.raises(FormatError, match="nested more than"):
        netio.load_net(_deep_net(), "typed")


@pytest.mark.parametrize("command", ["splits", "upgrade", "shapes", "draw"])
def test_the_command_line_says_one_line_and_exits_2(tmp_path, capsys, command):
    path = tmp_path / "deep.prototxt"
    path.write_text(_deep_net())
    extra = [str(tmp_path / ("out.prototxt" if command == "upgrade" else "out.svg"))]
    assert main.main([command, str(path), *(extra if command in ("upgrade", "draw") else [])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "nested more than" in err[0]
    assert not (tmp_path / "out.prototxt").exists() and not (tmp_path / "out.svg").exists()


def test_a_text_file_past_the_limit_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setitem(inputs.LIMITS, "text", 1000)  # the real limit is 512 MB
    path = tmp_path / "big.prototxt"
    path.write_text("# padding\n" * 200 + 'name: "x"\n')
    for read in (textio.read_net, textio.read_solver, netio.read_file):
        with pytest.raises(inputs.TooLarge) as caught:
            read(path)
        assert (
            str(caught.value) == f"{path}: 2,010 bytes, more than a prototxt can be (1,000 bytes); not read"
        )
    with pytest.raises(DataError, match="more than this kind of file can be"):
        read_list(path)
    with pytest.raises(DataError, match="more than this kind of file can be"):
        read_file_list(path)


def test_the_command_line_refuses_a_huge_net_and_huge_weights(tmp_path, capsys):
    huge = tmp_path / "huge.prototxt"
    with open(huge, "wb") as f:
        f.truncate(3 * 2**30)  # sparse: 3 GB on paper, nothing on disk
    assert main.main(["splits", str(huge)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {huge}: 3,072 MB, more than a prototxt can be (512 MB); not read"
    )
    net = tmp_path / "net.prototxt"
    net.write_text(HEAD + "}\n")
    model = tmp_path / "huge.caffemodel"
    os.rename(huge, model)
    assert main.main(["export", str(net), str(tmp_path / "n.onnx"), "--weights", str(model)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {model}: 3,072 MB, more than a binary NetParameter can be (2,048 MB); not read"]
    assert main.main([str(model)]) == 2  # `main.py PATH` says so before any window
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("3,072 MB, more than a binary NetParameter can be (2,048 MB); not read")
    )


def test_a_file_past_the_memory_free_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "available_memory", lambda: 10)
    path = tmp_path / "net.prototxt"
    path.write_text(HEAD + "}\n")
    with pytest.raises(inputs.TooLarge, match=r"more than the memory free now \(10 bytes\)"):
        textio.read_net(path)


def test_a_large_binary_file_is_checked_by_its_head_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(binaryio, "HEAD_CHECK_PAST", 100)  # the real threshold is 16 MB
    reads: list[int] = []
    real_open = inputs.open_regular

    class Counting:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def fileno(self):
            return self.f.fileno()

        def read(self, n=-1):
            data = self.f.read(n)
            reads.append(len(data))
            return data

    monkeypatch.setattr(binaryio, "open_regular", lambda *a: Counting(real_open(*a)))
    blob = caffe_pb2.BlobProto(data=[1.0] * 100_000).SerializeToString()  # 400 kB of another message
    path = tmp_path / "mean.caffemodel"
    path.write_bytes(blob)
    with pytest.raises(FormatError) as caught:
        binaryio.read_caffemodel(path)
    assert "its first field, force_backward, is stored as the wrong kind" in str(caught.value)
    assert sum(reads) < len(blob)  # the head only

    net = caffe_pb2.NetParameter(name="ok")
    net.layer.add(name="ip", type="InnerProduct").blobs.add(data=[0.5] * 1000)
    good = tmp_path / "good.caffemodel"
    good.write_bytes(net.SerializeToString())
    assert binaryio.read_caffemodel(good).layer[0].blobs[0].data[999] == 0.5
    text = tmp_path / "text.caffemodel"
    text.write_text(HEAD + "}\n" + "# pad\n" * 100)
    with pytest.raises(FormatError, match="looks like a text prototxt"):
        binaryio.read_caffemodel(text)
    assert binaryio.read_net_any(text).name == "x"  # --weights may name a prototxt


def test_first_field_problem_names_what_is_wrong():
    descriptor = cast(Descriptor, caffe_pb2.NetParameter.DESCRIPTOR)
    assert binaryio.first_field_problem(b"\x0a\x02ok", descriptor) is None  # name: "ok"
    assert binaryio.first_field_problem(b"\xa2\x06\x00", descriptor) is None  # layer {}
    assert "number 12" in (binaryio.first_field_problem(b"\x62", descriptor) or "")
    assert "no protobuf field tag" in (binaryio.first_field_problem(b"\xff" * 12, descriptor) or "")


def test_level_past_32_bits_is_one_line(tmp_path, capsys):
    solver = Path(__file__).resolve().parents[2] / "resources" / "examples" / "mlp_solver.prototxt"
    with pytest.raises(SystemExit, match="2"):
        main.main(["train", "--solver", str(solver), "--level", "3000000000"])
    err = capsys.readouterr().err.strip().splitlines()
    words = "3000000000 is out of range (a 32-bit integer, as Caffe keeps it)"
    assert err == [f"error: main.py train: argument --level/-level: {words}"]
    with pytest.raises(SystemExit, match="2"):
        main.main(["time", "--model", str(solver), "--iterations", "-3000000000"])
    assert "out of range" in capsys.readouterr().err


def test_upgrade_holds_text_to_the_prototxt_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(inputs.LIMITS, "text", 1000)
    path = tmp_path / "big.prototxt"
    path.write_text("# padding\n" * 200 + 'name: "x"\n')
    assert main.main(["upgrade", str(path), str(tmp_path / "out.prototxt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"{path}: 2,010 bytes, more than a prototxt can be (1,000 bytes); not read"
    assert not (tmp_path / "out.prototxt").exists()
