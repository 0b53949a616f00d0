"""Issue 30 case 5: ``main.py fill`` wrote an npz whatever the output's name said, over the net itself
too (``fill --model keep.prototxt keep.prototxt`` left a zip archive in place of the net). The output
may not be the net (the same file, through a link too), and its name says the format: .npz, or
Caffe weights (.caffemodel binary, .caffemodel.h5 HDF5) that the weights readers open."""

from __future__ import annotations

import os

import numpy as np
import pytest

import main as entry
from engine.cli.fill import initial_parameters
from proto import binaryio, caffe_pb2, hdf5io

NET = """name: "tiny"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 2 weight_filler { type: "xavier" }
    bias_filler { type: "constant" value: 0.5 } } }
"""


@pytest.fixture
def net(tmp_path):
    path = tmp_path / "keep.prototxt"
    path.write_text(NET)
    return path


def fill(capsys, *argv: str) -> tuple[int, list[str]]:
    code = entry.main(["fill", *argv])
    return code, capsys.readouterr().err.splitlines()


def test_the_net_itself_is_never_the_output(net, capsys):
    os.link(net, net.parent / "hard.npz")
    os.symlink(net, net.parent / "soft.npz")
    for out in (net, net.parent / "hard.npz", net.parent / "soft.npz"):
        code, err = fill(capsys, "--model", str(net), str(out))
        assert (code, err) == (2, [f"error: {out}: it is the net itself ({net}); refusing to overwrite it"])
    assert net.read_text() == NET


def test_an_output_of_another_extension_is_refused(net, capsys):
    code, err = fill(capsys, "--model", str(net), str(net.parent / "out.bin"))
    assert (code, err) == (
        2,
        [f"error: {net.parent / 'out.bin'}: the output must end in .npz, .caffemodel.h5, .caffemodel"],
    )
    assert sorted(p.name for p in net.parent.iterdir()) == ["keep.prototxt"]


@pytest.mark.parametrize("name", ["w.caffemodel", "w.caffemodel.h5", "w.npz"])
def test_the_extension_says_the_format(net, capsys, name):
    out = net.parent / name
    assert fill(capsys, "--model", str(net), "--seed", "3", str(out)) == (0, [])
    expected = initial_parameters(str(net), caffe_pb2.TRAIN, 3)
    if name.endswith(".npz"):
        got = dict(np.load(out))
    elif name.endswith(".h5"):
        assert hdf5io.is_hdf5(out)
        got = {f"ip/{k}": v for k, v in hdf5io.read_weights(out)["ip"].items()}
    else:
        layers = {layer.name: layer for layer in binaryio.read_caffemodel(str(out)).layer}
        got = {f"ip/{i}": np.asarray(b.data, np.float32) for i, b in enumerate(layers["ip"].blobs)}
    assert sorted(got) == ["ip/0", "ip/1"]
    for key, values in expected.items():  # the same draws, written and read back: equal to the bit
        np.testing.assert_array_equal(got[key].reshape(values.shape), values)
