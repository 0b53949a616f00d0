"""Opening what the user picks: a net (with the solver that trains it), a solver that brings its net
along, an example (an untitled copy), a legacy file (upgraded, modified)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.document import Document
from app.files import EXAMPLES, is_installed, open_path, solver_net_path
from app.models import open_any
from proto import caffe_pb2
from proto.errors import FormatError

NET = 'name: "n"\nlayer { name: "data" type: "Input" top: "data" }\n'
SOLVER = 'net: "n.prototxt"  # beside the solver\nbase_lr: 0.01\nmax_iter: 10\n'


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "n.prototxt").write_text(NET)
    (tmp_path / "s.prototxt").write_text(SOLVER)  # no "solver" in the name: found by content
    return tmp_path


def test_open_a_net_brings_the_solver_beside_it_that_names_it(folder):
    doc = Document()
    opened = open_path(doc, folder / "n.prototxt")
    assert opened.kind == "net" and opened.notices == ["Solver: s.prototxt (it trains this net)"]
    assert doc.net.name == "n" and doc.net_text() == NET and doc.solver_path == str(folder / "s.prototxt")
    assert not doc.dirty


def test_a_net_no_solver_names_opens_with_none_not_the_previous_one(folder):
    doc = Document()
    open_path(doc, folder / "s.prototxt")
    assert doc.solver.max_iter == 10
    (folder / "deploy.prototxt").write_text(NET.replace('"n"', '"deploy"'))
    (folder / "other_solver.prototxt").write_text('net: "elsewhere.prototxt"\nbase_lr: 0.1\n')
    opened = open_path(doc, folder / "deploy.prototxt")
    assert opened.notices == [] and doc.net.name == "deploy"
    assert doc.solver_path is None and doc.solver.ByteSize() == 0


def test_an_example_opens_as_an_untitled_copy_with_its_solver():
    doc = Document()
    opened = open_path(doc, EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    assert doc.net_path is None and doc.solver_path is None and doc.title == "LeNet (example)"
    assert opened.notices == [
        "Solver: the example's lenet_solver.prototxt (saved beside the net when you save it)"
    ]
    assert doc.origin == str(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    assert doc.solver.max_iter == 10000 and not doc.dirty
    assert is_installed(doc.origin) and not is_installed(__file__)
    with pytest.raises(ValueError):
        doc.save_net()  # no path: Save asks where


def test_open_a_solver_brings_its_net(folder):
    doc = Document()
    assert open_path(doc, folder / "s.prototxt").kind == "solver"
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
    (folder / "weights.prototxt").write_bytes(b"\x0a\x05LeNet\x00\xff\xfe")
    with pytest.raises(FormatError, match="binary"):
        open_path(Document(), folder / "weights.prototxt")


def test_a_broken_caffemodel_is_a_format_error_and_changes_nothing(folder):
    doc = Document()
    open_path(doc, folder / "n.prototxt")
    (folder / "weights.caffemodel").write_bytes(b"\x0a\x05LeNet\x00\xff\xfe")
    with pytest.raises(FormatError, match="weights.caffemodel"):
        open_any(doc, folder / "weights.caffemodel")
    assert doc.net.name == "n" and doc.weights_path is None


LEGACY = Path(__file__).resolve().parents[2] / "resources" / "examples" / "legacy" / "lenet_v1.prototxt"


@pytest.mark.skipif(not LEGACY.is_file(), reason="no legacy example")
def test_a_legacy_net_opens_upgraded_modified_with_a_notice_and_its_header_comments(tmp_path):
    legacy = tmp_path / "lenet_v1.prototxt"
    legacy.write_text(LEGACY.read_text())
    doc = Document()
    opened = open_path(doc, legacy)
    assert len(doc.net.layer) > 0 and len(doc.net.layers) == 0
    assert "layers {" not in doc.net_text() and "layer {" in doc.net_text()
    assert doc.dirty and doc.net_path == str(legacy)  # the file is not what the document holds
    assert len(opened.notices) == 1 and opened.notices[0].startswith("Upgraded from a legacy Caffe format")
    assert "V1 'layers'" in opened.notices[0]
    assert doc.net_text().startswith("# LeNet written in the legacy V1 format")  # the header stays
    doc.save_net()
    assert not doc.dirty and "layers {" not in legacy.read_text()
    assert legacy.read_text().startswith("# LeNet written")
