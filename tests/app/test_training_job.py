"""The training copy: the document's own net inlined, paths resolved beside it, the document untouched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from undo_history import History

from app.commands import SetSolverField
from app.document import Document
from app.files import EXAMPLES, open_path, runs_folder
from app.form_edits import solver_edit
from app.training import job as job_module
from app.training.job import absolutize_data_paths, make_job, provide_bundled_data
from app.training.run import Run
from proto import caffe_pb2
from proto.textio import parse_net, parse_solver


def open_example(tmp_path, solver: str) -> Document:
    for path in EXAMPLES.glob("mlp*.prototxt"):
        shutil.copy(path, tmp_path)
    doc = Document()
    open_path(doc, tmp_path / solver)
    return doc


def test_the_documents_net_is_inlined_and_later_edits_do_not_reach_it(tmp_path):
    doc = open_example(tmp_path, "mlp_solver.prototxt")
    before = doc.net.SerializeToString()
    job = make_job(doc)
    assert not job.solver.HasField("net")
    assert job.solver.net_param.SerializeToString() == before
    assert job.solver.net_param is not doc.net
    assert job.base_dir == str(tmp_path)
    assert job.solver.snapshot_prefix == "mlp"
    assert doc.net.SerializeToString() == before and not doc.dirty


def test_a_train_net_solver_gets_the_net_as_train_net_param(tmp_path):
    doc = open_example(tmp_path, "mlp_solver.prototxt")
    solver = caffe_pb2.SolverParameter()
    solver.CopyFrom(doc.solver)
    solver.ClearField("net")
    solver.train_net = "mlp.prototxt"
    solver.ClearField("snapshot_prefix")
    doc.load_solver(solver, str(tmp_path / "other_solver.prototxt"))
    job = make_job(doc, "gpu")
    assert job.solver.train_net_param.name == "MLP" and not job.solver.HasField("train_net")
    assert job.solver.snapshot_prefix == "other_solver"  # Caffe master's default
    assert job.solver.solver_mode == caffe_pb2.SolverParameter.GPU
    assert "GPU" in job.summary


def test_a_net_without_a_solver_trains_with_defaults():
    doc = Document()
    doc.load_net(parse_net('name: "tiny" layer { name: "x" type: "Input" top: "x" }'))
    job = make_job(doc)
    assert job.solver.base_lr == pytest.approx(0.01) and job.solver.max_iter == 1000
    assert job.notes and "No solver" in job.notes[0]
    # untitled: its snapshots go into a fresh folder under the runs folder, never the working directory
    assert (
        Path(job.output_dir).parent == runs_folder()
        and job.solver.snapshot_prefix == f"{job.output_dir}/tiny"
    )
    assert any(note.startswith(f"Snapshots go to {job.output_dir}") for note in job.notes)


def test_relative_data_sources_that_exist_beside_the_file_become_absolute(tmp_path):
    (tmp_path / "train_lmdb").mkdir()
    (tmp_path / "mean.binaryproto").write_bytes(b"")
    net = parse_net(
        """
        layer { name: "d" type: "Data" top: "x" data_param { source: "train_lmdb" }
                transform_param { mean_file: "mean.binaryproto" } }
        layer { name: "e" type: "Data" top: "y" data_param { source: "mnist_test_lmdb" } }
        """
    )
    absolutize_data_paths(net, str(tmp_path))
    assert net.layer[0].data_param.source == str(tmp_path / "train_lmdb")
    assert net.layer[0].transform_param.mean_file == str(tmp_path / "mean.binaryproto")
    assert net.layer[1].data_param.source == "mnist_test_lmdb"  # left for the data root


def test_missing_mnist_sources_get_the_bundled_copy(tmp_path, monkeypatch):
    from engine.data import mnist, paths

    folder = tmp_path / "bundled"
    for name in mnist.SPLITS:
        (folder / name).mkdir(parents=True)
    calls = []
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.setattr(paths, "user_data_dir", lambda: tmp_path / "no-user-data")  # no prepared copy
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(mnist, "ensure_mnist", lambda progress=None: calls.append(progress) or folder)
    net = parse_net(
        'layer { name: "d" type: "Data" top: "x" data_param { source: "examples/mnist/mnist_train_lmdb" } }'
    )
    lines = []
    data_paths = provide_bundled_data([net], lines.append)
    assert data_paths.root == folder and len(calls) == 1
    assert data_paths.resolve("examples/mnist/mnist_train_lmdb") == folder / "mnist_train_lmdb"
    assert any(str(folder) in line for line in lines)
    # Nothing global was set: other nets (the canvas's, another run's) still do not find it.
    assert paths.resolve("examples/mnist/mnist_train_lmdb") == Path("examples/mnist/mnist_train_lmdb")
    other = parse_net('layer { name: "d" type: "Data" top: "x" data_param { source: "my_own_lmdb" } }')
    assert job_module.provide_bundled_data([other], lines.append) == paths.DEFAULT and len(calls) == 1


# Fields that name the net or are legacy aliases: the run inlines the document's net instead.
_NOT_SCHEDULE = {"net", "train_net", "test_net", "solver_type"}


def _another(fd, value):
    if fd.enum_type is not None:
        numbers = [v.number for v in fd.enum_type.values]
        return numbers[(numbers.index(value) + 1) % len(numbers)]
    if fd.type == fd.TYPE_BOOL:
        return not value
    if fd.type == fd.TYPE_STRING:
        return f"{value}changed"
    return value + 3 if fd.cpp_type not in (fd.CPPTYPE_FLOAT, fd.CPPTYPE_DOUBLE) else value + 0.25


def test_a_run_of_an_example_records_the_solver_it_trained_with():
    """Issue 31 case 9: the LeNet example, base_lr 0.05 in the Solver tab, Train: the run's settings
    show 0.05, "inv" and 10000 iterations (the example's solver), not the built-in default."""
    doc = Document()
    open_path(doc, EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    assert doc.net_path is None and doc.title  # an untitled copy: the run writes into the runs folder
    History(doc).push(solver_edit(doc, "base_lr", 0.05))
    job = make_job(doc)
    assert job.notes  # where its snapshots go: said in the notes, not in the solver it records
    assert job.solver_text == doc.solver_text() and "# Training schedule" in job.solver_text
    recorded = parse_solver(job.solver_text)
    assert (recorded.base_lr, recorded.lr_policy, recorded.max_iter) == (pytest.approx(0.05), "inv", 10000)
    assert "base_lr: 0.05" in Run(1, job).settings_text()


def test_every_solver_field_changed_is_what_the_run_records():
    doc = Document()
    open_path(doc, EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    history = History(doc)
    fields = [
        fd
        for fd in caffe_pb2.SolverParameter.DESCRIPTOR.fields
        if fd.message_type is None and not fd.is_repeated and fd.name not in _NOT_SCHEDULE
    ]
    assert len(fields) >= 30  # base_lr, momentum, lr_policy, max_iter, snapshot, type, ...
    for fd in fields:
        history.push(SetSolverField(fd.name, _another(fd, getattr(doc.solver, fd.name))))
        recorded = parse_solver(make_job(doc).solver_text, upgrade=False)
        assert getattr(recorded, fd.name) == getattr(doc.solver, fd.name), fd.name
    assert parse_solver(make_job(doc).solver_text, upgrade=False) == doc.solver
