"""Replay real Caffe 1.0 outputs (tests/data/caffe-goldens) through the engine's Net.

Each case: build the net from net.prototxt in its phase, load weights.caffemodel, set the inputs,
forward (compare every blob), and for TRAIN cases backward once (compare the inputs' diffs, the
params after the pass and the param diffs), with the tolerances the goldens' README gives.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from google.protobuf import text_format
from tests_support import GOLDEN_LAYER_CASES, close

from engine import backend
from engine.net import Net
from proto import caffe_pb2

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def load_case(goldens, name, xp):
    case = goldens / "layers" / name
    meta = json.loads((case / "meta.json").read_text())
    param = text_format.Parse((case / "net.prototxt").read_text(), caffe_pb2.NetParameter())
    phase = caffe_pb2.Phase.Value(meta["phase"])
    net = Net(param, phase=phase, xp=xp)
    weights = caffe_pb2.NetParameter.FromString((case / "weights.caffemodel").read_bytes())
    net.copy_trained_layers_from(weights)
    io = np.load(case / "io.npz")
    return net, meta, io


@pytest.mark.parametrize("name", GOLDEN_LAYER_CASES)
def test_layer_case_matches_caffe(goldens, xp, name):
    net, meta, io = load_case(goldens, name, xp)
    for blob_name in meta["inputs"]:
        net.blob_by_name(blob_name).data[...] = xp.asarray(io["data/" + blob_name])
    net.forward()
    rtol = 1e-4
    for key in io.files:
        kind, _, rest = key.partition("/")
        want = io[key]
        if kind == "data":
            got = backend.to_host(net.blob_by_name(rest).data)
            if "acc" in rest:
                assert np.array_equal(got, want), f"{name}: {key} is {got}, Caffe gave {want}"
            else:
                assert close(got, want, rtol), f"{name}: {key} differs from Caffe"
    if not meta["backward"]:
        return
    net.backward()
    for key in io.files:
        kind, _, rest = key.partition("/")
        want = io[key]
        if kind == "diff":
            got = backend.to_host(net.blob_by_name(rest).diff)
        elif kind in ("param", "pdiff"):
            layer_name, index = rest.rsplit("/", 1)
            blob = net.layer_by_name(layer_name).blobs[int(index)]
            got = backend.to_host(blob.data if kind == "param" else blob.diff)
        else:
            continue
        assert close(got, want, rtol), (
            f"{name}: {key} differs from Caffe (max |diff| {np.abs(got - want).max():g})"
        )


def test_saved_net_matches_caffe_layout(goldens):
    """Our to_proto writes the layers Caffe writes: splits included, phase and loss_weight set."""
    net, _, _ = load_case(goldens, "accuracy_test", np)
    ours = net.to_proto()
    theirs = caffe_pb2.NetParameter.FromString(
        (goldens / "layers/accuracy_test/weights.caffemodel").read_bytes()
    )
    for message in (ours, theirs):
        for layer in message.layer:
            del layer.blobs[:]
    assert text_format.MessageToString(ours) == text_format.MessageToString(theirs)
