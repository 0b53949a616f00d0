"""``upgrade IN OUT`` (proto.cli_upgrade.run): what it writes, prints, and how it fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from proto import caffe_pb2, cli_upgrade, upgrade
from proto.binaryio import read_caffemodel, write_caffemodel
from proto.textio import read_net, read_solver

V1_NET = """name: "mlp"
input: "data" input_dim: 64 input_dim: 1 input_dim: 28 input_dim: 28
layers { name: "ip1" type: INNER_PRODUCT bottom: "data" top: "ip1" blobs_lr: 1 blobs_lr: 2
  weight_decay: 1 weight_decay: 0 inner_product_param { num_output: 10 } }
layers { name: "prob" type: SOFTMAX bottom: "ip1" top: "prob" include { phase: TEST } }
"""


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli_upgrade.run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_upgrades_a_v1_net(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    source, target = tmp_path / "mlp_v1.prototxt", tmp_path / "mlp.prototxt"
    source.write_text(V1_NET)
    code, out, err = _run(capsys, source, target)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"Upgraded net {source} -> {target}:",
        f"  {upgrade.STEP_V1}",
        f"  {upgrade.STEP_INPUT}",
    ]
    net = read_net(target, upgrade=False)
    assert not upgrade.net_needs_upgrade(net)
    assert [(layer.name, layer.type) for layer in net.layer] == [
        ("input", "Input"),
        ("ip1", "InnerProduct"),
        ("prob", "Softmax"),
    ]
    assert [(p.lr_mult, p.decay_mult) for p in net.layer[1].param] == [(1, 1), (2, 0)]
    assert source.read_text() == V1_NET  # the input is untouched


def test_upgrades_a_solver_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "solver.prototxt"
    path.write_text('net: "mlp.prototxt"\nbase_lr: 0.01\nsolver_type: NESTEROV\n')
    code, out, err = _run(capsys, path, path)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"Upgraded solver {path} -> {path}:"
    solver = read_solver(path, upgrade=False)
    assert solver.type == "Nesterov" and not solver.HasField("solver_type")
    assert [p.name for p in tmp_path.iterdir()] == ["solver.prototxt"]


def test_binary_caffemodel_stays_binary(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    legacy = caffe_pb2.NetParameter()
    layer = legacy.layers.add(name="ip", type=caffe_pb2.V1LayerParameter.INNER_PRODUCT)
    layer.blobs.add(data=[1.0, 2.0]).shape.dim.append(2)
    write_caffemodel(tmp_path / "old.caffemodel", legacy)
    code, out, _ = _run(capsys, tmp_path / "old.caffemodel", tmp_path / "new.caffemodel")
    assert code == 0 and out.startswith("Upgraded binary net")
    net = read_caffemodel(tmp_path / "new.caffemodel", upgrade=False)
    assert net.layer[0].type == "InnerProduct" and list(net.layer[0].blobs[0].data) == [1.0, 2.0]


def test_current_file_is_copied_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    source = tmp_path / "net.prototxt"
    source.write_text('name: "n" layer { name: "r" type: "ReLU" bottom: "x" top: "x" }')
    code, out, err = _run(capsys, source, tmp_path / "out.prototxt")
    assert (code, err) == (0, "")
    assert "already in the latest net format" in out
    assert read_net(tmp_path / "out.prototxt") == read_net(source)


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('name: "n"\nlayers { name: "a" type: RELUU }\n', ":2:26: "),  # a net: bad enum
        ('net: "n.prototxt"\nbase_lr: 0.01\nlr_polcy: "fixed"\n', ":3:1: "),  # a solver: typo
        ('name: "n"\nlayer {\n', ":2:7: "),  # truncated
        ("", ": neither a net nor a solver"),
    ],
    ids=["net", "solver", "truncated", "empty"],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content, where):
    source, target = tmp_path / "bad.prototxt", tmp_path / "out.prototxt"
    source.write_text(content)
    code, out, err = _run(capsys, source, target)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"{source}{where}"), err
    assert not target.exists()


def test_solver_typo_is_reported_against_the_solver_schema(tmp_path: Path, capsys):
    source = tmp_path / "s.prototxt"
    source.write_text('net: "n.prototxt"\nlr_polcy: "fixed"\n')
    _, _, err = _run(capsys, source, tmp_path / "o")
    assert 'Message type "caffe.SolverParameter" has no field named "lr_polcy".' in err


def test_binary_garbage_and_missing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    garbage = tmp_path / "garbage.caffemodel"
    garbage.write_bytes(bytes(range(256)))
    code, _, err = _run(capsys, garbage, tmp_path / "o")
    assert code == 2 and err.startswith(f"{garbage}: not a binary NetParameter") and err.count("\n") == 1
    code, _, err = _run(capsys, tmp_path / "absent.prototxt", tmp_path / "o")
    assert code == 2 and err == f"{tmp_path / 'absent.prototxt'}: No such file or directory\n"


def test_usage(capsys: pytest.CaptureFixture[str]):
    assert _run(capsys, "only-one")[0] == 2
    code, out, _ = _run(capsys, "--help")
    assert code == 0 and out.startswith("usage: upgrade IN OUT")
