"""Opening what the user picks: a net, or a solver that brings its net along."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.document import Document
from app.files import open_path, solver_net_path
from proto import caffe_pb2
from proto.errors import FormatError

NET = 'name: "n"\nlayer { name: "data" type: "Input" top: "data" }\n'
SOLVER = 'net: "n.prototxt"  # beside the solver\nbase_lr: 0.01\nmax_iter: 10\n'


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "n.prototxt").write_text(NET)
    (tmp_path / "s.prototxt").write_text(SOLVER)  # no "solver" in the name: found by content
    return tmp_path


def test_open_a_net(folder):
    doc = Document()
    assert open_path(doc, folder / "n.prototxt") == "net"
    assert doc.net.name == "n" and doc.net_text() == NET and doc.solver_path is None


def test_open_a_solver_brings_its_net(folder):
    doc = Document()
    assert open_path(doc, folder / "s.prototxt") == "solver"
    assert doc.net_path == str(folder / "n.prototxt") and doc.net.name == "n"
    assert doc.solver.max_iter == 10 and doc.solver_text() == SOLVER and not doc.dirty


def test_a_solver_whose_net_is_missing_changes_nothing(folder):
    (folder / "lonely_solver.prototxt").write_text('net: "missing.prototxt"\n')
    doc = Document()
    with pytest.raises(FormatError, match="net 'missing.prototxt' not found: tried ") as info:
        open_path(doc, folder / "lonely_solver.prototxt")  # one line naming where it looked, no [Errno 2]
    assert "Errno" not in str(info.value)
    assert doc.net_path is None and doc.solver_path is None


def test_neither_net_nor_solver_reports_the_nets_error(folder):
    (folder / "bad.prototxt").write_text("layer { nme: 1 }\n")
    with pytest.raises(FormatError, match="nme") as info:
        open_path(Document(), folder / "bad.prototxt")
    assert info.value.line == 1


def test_solver_net_path(folder):
    solver = caffe_pb2.SolverParameter(train_net="n.prototxt")
    assert solver_net_path(solver, folder / "s.prototxt") == folder / "n.prototxt"
    assert solver_net_path(caffe_pb2.SolverParameter(), folder / "s.prototxt") is None


def test_a_binary_file_is_a_format_error(folder):
    (folder / "weights.caffemodel").write_bytes(b"\x0a\x05LeNet\x00\xff\xfe")
    with pytest.raises(FormatError, match="binary"):
        open_path(Document(), folder / "weights.caffemodel")


LEGACY = Path(__file__).resolve().parents[2] / "resources" / "examples" / "legacy" / "lenet_v1.prototxt"


@pytest.mark.skipif(not LEGACY.is_file(), reason="no legacy example")
def test_a_legacy_net_opens_upgraded_and_shows_the_upgraded_text():
    doc = Document()
    open_path(doc, LEGACY)
    assert len(doc.net.layer) > 0 and len(doc.net.layers) == 0
    assert "layers {" not in doc.net_text() and "layer {" in doc.net_text()
