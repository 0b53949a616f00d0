"""``main.py shapes``: one line per layer with the canvas's shapes, params and FLOPs; the same
numbers ``engine.Net`` builds on every example, every shape of nets whose data is absent, and
``main.py draw`` following the same rules."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from graph_view_support import EXAMPLE_NETS, REPO
from real_nets import CIFAR_TRAIN_TEST, write_cifar, write_googlenet

import main
from engine.data import mnist
from engine.net import Net
from graph_view import sidecar
from proto import caffe_pb2, textio


def _rows(out: str) -> dict[str, list[str]]:
    """name -> [type, tops, params, flops] from the table (the header, total and notes left out)."""
    rows = {}
    for line in out.splitlines()[1:]:
        if line.startswith(("total:", "* ")):
            continue
        name, kind, tops, params, flops = line.split()
        rows[name] = [kind, tops, params, flops]
    return rows


def _shape(text: str) -> tuple[int, ...] | None:
    text = text.rstrip("*")
    return None if text == "?" else () if text == "scalar" else tuple(int(d) for d in text.split("x"))


@pytest.fixture(scope="module")
def mnist_root(tmp_path_factory):
    folder = mnist.default_folder()
    return folder if mnist.is_complete(folder) else mnist.ensure_mnist(tmp_path_factory.mktemp("mnist"))


@pytest.mark.parametrize("path", EXAMPLE_NETS, ids=lambda p: p.name)
@pytest.mark.parametrize("phase", ["TRAIN", "TEST"])
def test_shapes_agree_with_engine_net_on_every_example(path, phase, capsys, monkeypatch, mnist_root):
    monkeypatch.setenv("BARISTA_DATA_ROOT", str(mnist_root))
    assert main.main(["shapes", str(path), "--phase", phase, "--splits"]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    net = Net(textio.read_net(path), caffe_pb2.Phase.Value(phase))
    try:
        assert list(rows) == net.layer_names  # one line per layer, Caffe's Splits included
        for i, name in enumerate(net.layer_names):
            kind, tops, params, _flops = rows[name]
            layer = net.layers[i]
            assert kind == layer.type
            assert [_shape(t) for t in tops.split(",")] == [b.shape for b in net.top_vecs[i]] or (
                tops == "-" and not net.top_vecs[i]
            ), name
            learned = 0 if layer.type == "BatchNorm" else sum(math.prod(b.shape) for b in layer.blobs)
            assert int(params) == learned, name
        assert "*" not in out  # every source was read: nothing is assumed
    finally:
        net.close()


def _run(*args: str, cwd=REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "main.py"), *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_a_googlenet_like_train_val_without_its_lmdb_prints_every_shape(tmp_path):
    path = write_googlenet(tmp_path, deploy=False)
    done = _run("shapes", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    assert rows["data"][1] == "32x3x224x224*,32*"
    assert all("?" not in tops for _kind, tops, _p, _f in rows.values())
    flops = 2 * 112 * 112 * (64 * 3 * 7 * 7) + 64 * 112 * 112  # per image: multiply-adds and biases
    assert rows["conv1/7x7_s2"] == ["Convolution", "32x64x112x112", "9472", str(flops)]
    assert "* data: assumed from the layer's 3 mean_values, crop_size 224 and batch_size 32" in done.stdout
    assert "warning: data: data not read (" in done.stderr and "ilsvrc12_train_lmdb" in done.stderr
    test = _rows(_run("shapes", str(path), "--phase", "TEST", cwd=tmp_path).stdout)
    assert test["data"][1] == "50x3x224x224*,50*" and test["loss3/top-1"][1] == "scalar"


def test_a_cifar_like_net_takes_the_shape_typed_on_the_command_line(tmp_path, capsys):
    path = write_cifar(tmp_path, deploy=False)
    assert main.main(["shapes", str(path)]) == 0
    unknown = capsys.readouterr()
    assert _rows(unknown.out)["conv1"][1] == "?"
    assert "--input-shape data=N,C,H,W" in unknown.err
    assert main.main(["shapes", str(path), "--input-shape", "data=100,3,32,32"]) == 0
    typed = capsys.readouterr()
    rows = _rows(typed.out)
    assert rows["cifar"][1] == "100x3x32x32*,100*" and rows["ip2"][1] == "100x10"
    assert "total: 145578 params" in typed.out
    assert "* cifar: assumed from the shape typed for it (data=100,3,32,32)" in typed.out


def test_the_assumed_shape_kept_in_the_sidecar_is_used_and_the_flag_wins(tmp_path, capsys):
    path = write_cifar(tmp_path, deploy=False)
    sidecar.save(path, sidecar.ViewState(input_shapes={"data": (10, 3, 32, 32)}))
    assert main.main(["shapes", str(path)]) == 0
    assert _rows(capsys.readouterr().out)["conv1"][1] == "10x32x32x32"
    assert main.main(["shapes", str(path), "--input-shape", "data=7,3,32,32"]) == 0
    assert _rows(capsys.readouterr().out)["conv1"][1] == "7x32x32x32"
    assert path.read_text() == CIFAR_TRAIN_TEST  # the assumption lives beside the net, never in it


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        ("data", "give it as BLOB=N,C,H,W"),
        ("data=3,x", "is not a list of whole numbers"),
        ("data=0,3", "every dimension must be positive"),
    ],
)
def test_a_malformed_input_shape_is_one_line_and_exit_2(tmp_path, capsys, flag, words):
    path = write_cifar(tmp_path, deploy=False)
    assert main.main(["shapes", str(path), "--input-shape", flag]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: --input-shape {flag}: ") and words in err


@pytest.mark.parametrize("command", ["shapes", "draw"])
@pytest.mark.parametrize("blob", ["dta", "conv1"])  # no blob at all; a blob a convolution makes
def test_an_input_shape_for_no_data_blob_is_refused_in_one_line(tmp_path, capsys, command, blob):
    """#32 case 11: the shape was silently ignored; now it is refused, naming the data blobs."""
    path = write_cifar(tmp_path, deploy=False)
    out = [str(tmp_path / "cifar.svg")] if command == "draw" else []
    assert main.main([command, str(path), *out, "--input-shape", f"{blob}=1,3,32,32"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    words = "is not a data blob of the TRAIN net (its data blobs: data, label)"
    assert err == [f"error: --input-shape {blob}: '{blob}' {words}"]
    assert not (tmp_path / "cifar.svg").exists()


def test_draw_follows_the_same_rules(tmp_path, capsys):
    path = write_cifar(tmp_path, deploy=False)
    out = tmp_path / "cifar.svg"
    assert main.main(["draw", str(path), str(out), "--input-shape", "data=100,3,32,32"]) == 0
    err = capsys.readouterr().err
    assert "shapes assumed from the shape typed for it (data=100,3,32,32)" in err
    text = out.read_text()
    assert "100×32×32×32" in text and "100×10" in text  # the wires carry the shapes
    assert "assumed" in text  # and the data layer says its shapes are assumed


def test_an_input_shape_for_a_net_without_data_layers_says_so(tmp_path, capsys):
    lenet = REPO / "resources" / "examples" / "mnist" / "lenet.prototxt"  # an Input layer, no data layer
    assert main.main(["shapes", str(lenet), "--input-shape", "data=1,1,28,28"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --input-shape data: the TRAIN net has no Data, ImageData, HDF5Data or WindowData layer "
        "to take a shape (an Input layer's shape is in its input_param)"
    )
