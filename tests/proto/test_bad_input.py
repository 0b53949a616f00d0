"""Every kind of bad file gives one FormatError line: the file first, line:column for text."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from proto import caffe_pb2
from proto.binaryio import parse_datum, read_blob, read_caffemodel, read_net_any, read_solverstate
from proto.errors import FormatError
from proto.textio import parse_net, read_net, read_solver

LENET_HEAD = 'name: "LeNet"\nlayer {\n  name: "conv1"\n  type: "Convolution"\n'


def _error(read: Callable[[Path], Any], path: Path) -> FormatError:
    with pytest.raises(FormatError) as info:
        read(path)
    text = str(info.value)
    assert "\n" not in text and "Traceback" not in text
    assert text.startswith(f"{path}:"), text
    assert info.value.path == str(path)
    return info.value


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            LENET_HEAD + "    bogus: 1\n}\n",
            ':5:5: Message type "caffe.LayerParameter" has no field named "bogus".',
        ),
        (LENET_HEAD + "  convolution_param { num_output: 20", ':5:35: Expected "}".'),
        (LENET_HEAD + '  name: "again"\n}\n', ':5:9: Message type "caffe.LayerParameter" should not have '
         'multiple "name" fields.'),
        (
            LENET_HEAD + "  include { phase: TRAINING }\n}\n",
            ':5:20: Enum type "caffe.Phase" has no value named TRAINING.',
        ),
        (LENET_HEAD + '  bottom: "data\n}\n', ":5:11: String missing ending quote: '\"data'"),
        (LENET_HEAD + "  convolution_param { num_output: -3 }\n}\n", ":5:35: Value out of range: -3"),
    ],
    ids=["unknown-field", "truncated", "field-twice", "bad-enum", "open-string", "out-of-range"],
)  # fmt: skip
def test_text_errors_name_the_line_and_column(tmp_path: Path, content: str, expected: str):
    path = tmp_path / "lenet.prototxt"
    path.write_text(content)
    error = _error(read_net, path)
    assert str(error) == f"{path}{expected}"
    assert (error.line, error.column) == tuple(int(n) for n in expected.split(":")[1:3])


def test_message_format_matches_the_brief():
    with pytest.raises(FormatError) as info:
        parse_net(LENET_HEAD + "    bogus: 1\n}\n", "lenet.prototxt")
    assert (
        str(info.value)
        == 'lenet.prototxt:5:5: Message type "caffe.LayerParameter" has no field named "bogus".'
    )


def test_a_solver_given_as_a_net(tmp_path: Path):
    path = tmp_path / "solver.prototxt"
    path.write_text('net: "lenet.prototxt"\nbase_lr: 0.01\n')
    assert str(_error(read_net, path)).endswith(
        ':1:1: Message type "caffe.NetParameter" has no field named "net".'
    )
    net = tmp_path / "net.prototxt"
    net.write_text('name: "x"\n')
    assert "1:1:" in str(_error(read_solver, net))


def test_missing_required_fields_in_text(tmp_path: Path):
    path = tmp_path / "clip.prototxt"
    path.write_text('layer { name: "c" type: "Clip" clip_param { min: 0 } }')
    assert str(_error(read_net, path)) == f"{path}: Message missing required fields: layer[0].clip_param.max"


def test_binary_data_given_as_prototxt(tmp_path: Path):
    path = tmp_path / "weights.caffemodel"
    net = caffe_pb2.NetParameter(name="n")
    net.layer.add(name="ip", type="InnerProduct").blobs.add(data=[1.0, 0.0])
    path.write_bytes(net.SerializeToString())
    assert str(_error(read_net, path)) == f"{path}: not a text prototxt (binary data?)"
    nul = tmp_path / "nul.prototxt"
    nul.write_bytes(b'name: "x"\0\n')
    assert str(_error(read_solver, nul)) == f"{nul}: not a text prototxt (binary data?)"


def test_non_utf8_text_points_at_the_byte(tmp_path: Path):
    path = tmp_path / "latin1.prototxt"
    path.write_bytes('name: "x"\n# réseau\n'.encode("latin-1"))
    error = _error(read_net, path)
    assert str(error) == f"{path}:2:4: not a text prototxt (binary data?): invalid UTF-8 byte 0xe9"


def test_prototxt_given_as_caffemodel(tmp_path: Path):
    path = tmp_path / "lenet.prototxt"
    path.write_text("# a net\n" + LENET_HEAD + "}\n")
    error = _error(read_caffemodel, path)
    assert str(error) == f"{path}: not a binary NetParameter: looks like a text prototxt"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "not a binary NetParameter: the file is empty"),
        (caffe_pb2.NetParameter(name="LeNet").SerializeToString()[:-2], "not a binary NetParameter: "),
        (os.urandom(0) + bytes(range(256)) * 4, "not a binary NetParameter: "),
        (b"\x89HDF\r\n\x1a\n" + bytes(64), "not a binary NetParameter: this is an HDF5 file"),
        (
            caffe_pb2.BlobProto(data=[1.0, 2.0]).SerializeToString(),
            "not a binary NetParameter: none of its fields are present (another kind of file?)",
        ),
    ],
    ids=["empty", "truncated", "garbage", "hdf5", "other-message"],
)
def test_bad_caffemodels(tmp_path: Path, content: bytes, expected: str):
    path = tmp_path / "bad.caffemodel"
    path.write_bytes(content)
    error = _error(read_caffemodel, path)
    assert str(error).startswith(f"{path}: {expected}")
    assert error.line is None


def test_truncated_real_caffemodel(goldens: Path, tmp_path: Path):
    data = (goldens / "layers" / "convolution" / "weights.caffemodel").read_bytes()
    path = tmp_path / "cut.caffemodel"
    path.write_bytes(data[: len(data) // 2])
    assert "not a binary NetParameter: Wire format was corrupt" in str(_error(read_caffemodel, path))


def test_missing_required_fields_in_binary(tmp_path: Path):
    layer = caffe_pb2.LayerParameter(name="c", type="Clip")
    layer.clip_param.min = 0
    net = caffe_pb2.NetParameter()
    net.layer.append(layer)
    path = tmp_path / "clip.caffemodel"
    path.write_bytes(net.SerializePartialToString())
    assert str(_error(read_caffemodel, path)).endswith("missing required fields: layer[0].clip_param.max")


def test_other_binary_readers_say_what_they_expected(tmp_path: Path):
    path = tmp_path / "x.prototxt"
    path.write_text('name: "x"\n')
    assert "not a binary SolverState: looks like a text prototxt" in str(_error(read_solverstate, path))
    assert "not a binary BlobProto: looks like a text prototxt" in str(_error(read_blob, path))
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert "the file is empty" in str(_error(read_net_any, empty))
    with pytest.raises(FormatError, match=r"^lmdb key 00000001: not a binary Datum: "):
        parse_datum(b"\xff\xff\xff", "lmdb key 00000001")


def test_upgrade_errors_name_the_file(tmp_path: Path):
    cases = {
        "dims.prototxt": 'input: "x" input_dim: 1 input_dim: 3',
        "v0type.prototxt": 'layers { layer { name: "w" type: "warp" } }',
        "pad.prototxt": 'input: "x" layers { layer { name: "p" type: "padding" pad: 1 } '
        'bottom: "x" top: "p" } layers { layer { name: "r" type: "relu" } bottom: "p" top: "r" }',
        "blob.prototxt": 'layers { layer { name: "r" type: "relu" } bottom: "nowhere" top: "r" }',
        "solver.prototxt": 'solver_type: ADAM type: "Adam"',
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_text(content)
        read = read_solver if name.startswith("solver") else read_net
        assert _error(read, path).line is None


def test_missing_file_is_an_os_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        read_net(tmp_path / "absent.prototxt")


def test_format_error_pickles():
    error = FormatError("a.prototxt", "bad\nthing", 3, 4)
    assert str(error) == "a.prototxt:3:4: bad thing"
    again = pickle.loads(pickle.dumps(error))
    assert (again.path, again.line, again.column, str(again)) == ("a.prototxt", 3, 4, str(error))
