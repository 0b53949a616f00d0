"""The bundled example nets and solvers: they parse, round-trip, and are wired as Caffe would accept."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from google.protobuf.message import Message

from proto import caffe_pb2, upgrade

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
FILES = sorted(EXAMPLES.rglob("*.prototxt"))
LEGACY = {"legacy/lenet_v1.prototxt"}


def _rel(path: Path) -> str:
    return path.relative_to(EXAMPLES).as_posix()


def _is_solver(path: Path) -> bool:
    return "solver" in path.name


def _parse(path: Path) -> Message:
    message = caffe_pb2.SolverParameter() if _is_solver(path) else caffe_pb2.NetParameter()
    text_format.Parse(path.read_text(), message)
    return message


def _round_trip(message: Message) -> Message:
    again = type(message)()
    text_format.Parse(text_format.MessageToString(message), again)
    return again


NETS = [p for p in FILES if not _is_solver(p)]
SOLVERS = [p for p in FILES if _is_solver(p)]


def test_the_expected_examples_are_present():
    expected = {
        "mnist/lenet_train_test.prototxt",
        "mnist/lenet_solver.prototxt",
        "mnist/lenet.prototxt",
        "mlp.prototxt",
        "mlp_solver.prototxt",
        "caffenet.prototxt",
        "inception.prototxt",
        "resnet.prototxt",
        "fcn.prototxt",
        "siamese.prototxt",
        "legacy/lenet_v1.prototxt",
        "legacy/lenet_solver_v1.prototxt",
    }
    assert expected <= {_rel(p) for p in FILES}


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_parses_and_round_trips(path: Path):
    message = _parse(path)
    assert message.ByteSize() > 0
    assert _round_trip(message) == message


@pytest.mark.parametrize("path", NETS, ids=_rel)
def test_net_uses_one_format(path: Path):
    net = _parse(path)
    if _rel(path) in LEGACY:
        assert len(net.layers) > 0 and len(net.layer) == 0
    else:
        assert len(net.layer) > 0 and len(net.layers) == 0
        assert not net.input and not net.input_dim and not net.input_shape


def _in_phase(rules_include, rules_exclude, phase: int) -> bool:
    # The examples filter by phase only, so a rule matches exactly when its phase does.
    if rules_include:
        return any(r.phase == phase for r in rules_include)
    return not any(r.phase == phase for r in rules_exclude)


def _assert_wired(net: caffe_pb2.NetParameter, phase: int) -> None:
    """Each bottom exists when read; a top is new or in place (top i == bottom i), as Caffe requires."""
    blobs = set(net.input)
    layers = net.layers if len(net.layers) else net.layer
    kept = [layer for layer in layers if _in_phase(layer.include, layer.exclude, phase)]
    assert kept
    for layer in kept:
        for bottom in layer.bottom:
            assert bottom in blobs, f"{layer.name}: unknown bottom {bottom!r}"
        for i, top in enumerate(layer.top):
            in_place = i < len(layer.bottom) and layer.bottom[i] == top
            assert in_place or top not in blobs, f"{layer.name}: {top!r} produced twice"
            blobs.add(top)


PHASES = pytest.mark.parametrize("phase", [caffe_pb2.TRAIN, caffe_pb2.TEST], ids=["TRAIN", "TEST"])


@PHASES
@pytest.mark.parametrize("path", NETS, ids=_rel)
def test_net_is_wired(path: Path, phase: int):
    _assert_wired(_parse(path), phase)


@pytest.mark.parametrize("path", SOLVERS, ids=_rel)
def test_solver_points_at_a_net_beside_it(path: Path):
    solver = _parse(path)
    assert solver.net and (path.parent / solver.net).is_file()
    _parse(path.parent / solver.net)
    assert solver.max_iter > 0 and solver.base_lr > 0


def test_legacy_solver_uses_the_enum():
    solver = _parse(EXAMPLES / "legacy" / "lenet_solver_v1.prototxt")
    assert solver.HasField("solver_type") and not solver.HasField("type")
    for path in SOLVERS:
        if "legacy" not in path.parts:
            assert not _parse(path).HasField("solver_type")


def test_lenet_matches_the_classic_settings():
    net = _parse(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    data = [layer for layer in net.layer if layer.type == "Data"]
    assert [(d.include[0].phase, d.data_param.source, d.data_param.batch_size) for d in data] == [
        (caffe_pb2.TRAIN, "mnist_train_lmdb", 64),
        (caffe_pb2.TEST, "mnist_test_lmdb", 100),
    ]
    assert all(d.transform_param.scale == pytest.approx(1 / 256) for d in data)
    solver = _parse(EXAMPLES / "mnist" / "lenet_solver.prototxt")
    assert (solver.lr_policy, solver.test_iter[:], solver.solver_mode) == (
        "inv",
        [100],
        caffe_pb2.SolverParameter.CPU,
    )


def test_readme_describes_every_file():
    readme = (EXAMPLES / "README.md").read_text()
    for path in FILES:
        assert f"`{_rel(path)}`" in readme, _rel(path)


def test_inception_fans_one_blob_out_to_four_branches():
    net = _parse(EXAMPLES / "inception.prototxt")
    readers: dict[str, int] = {}
    for layer in net.layer:
        for bottom in layer.bottom:
            readers[bottom] = readers.get(bottom, 0) + 1
    assert sum(1 for n in readers.values() if n >= 4) >= 2


def test_siamese_towers_share_every_parameter():
    net = _parse(EXAMPLES / "siamese.prototxt")
    names = [p.name for layer in net.layer for p in layer.param]
    assert names and all(names.count(n) == 2 for n in names)


@pytest.mark.parametrize("path", [p for p in NETS if _rel(p) not in LEGACY], ids=_rel)
def test_current_examples_need_no_upgrade(path: Path):
    assert not upgrade.net_needs_upgrade(_parse(path))


@PHASES
def test_legacy_net_upgrades_and_round_trips(phase: int):
    legacy = _parse(EXAMPLES / "legacy" / "lenet_v1.prototxt")
    net = upgrade.upgrade_net_as_needed(legacy, "lenet_v1.prototxt")
    assert len(net.layers) == 0 and not net.input and not net.input_dim
    assert [layer.name for layer in net.layer] == ["input"] + [layer.name for layer in legacy.layers]
    assert net.layer[0].type == "Input" and list(net.layer[0].top) == ["data", "label"]
    conv1 = net.layer[1]
    assert conv1.type == "Convolution"
    assert [(p.lr_mult, p.decay_mult) for p in conv1.param] == [(1, 1), (2, 0)]
    assert _round_trip(net) == net
    assert not upgrade.net_needs_upgrade(net)
    _assert_wired(net, phase)


def test_legacy_solver_upgrades_to_the_type_string():
    solver = upgrade.upgrade_solver_as_needed(_parse(EXAMPLES / "legacy" / "lenet_solver_v1.prototxt"))
    assert solver.type == "SGD" and not solver.HasField("solver_type")
    assert _round_trip(solver) == solver
