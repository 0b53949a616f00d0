"""The derived picture, without Qt: bands, wires, shapes as the engine computes them, sizes, FLOPs,
the split overlay and the problems a designer sees."""

from __future__ import annotations

import pytest
from graph_view_support import EXAMPLE_NETS, EXAMPLES, FORK, net_of

from bench.graph_scale import resnet152
from engine.net import Net
from graph_view.graph import build
from graph_view.validation import WARNING, validate
from proto import caffe_pb2
from proto.textio import read_net


def test_in_place_layers_become_bands_of_their_producer():
    graph = build(read_net(EXAMPLES / "mnist" / "lenet.prototxt"))
    assert "relu1" not in graph.nodes
    assert [b.layer.name for b in graph.nodes["ip1"].bands] == ["relu1"]
    assert graph.host["relu1"] == "ip1"
    wire = next(e for e in graph.edges if e.dst == "ip2")
    assert (wire.src, wire.blob, wire.shape) == ("ip1", "ip1", (64, 500))


@pytest.mark.parametrize(
    "path", [p for p in EXAMPLE_NETS if "train_test" not in p.name], ids=lambda p: p.stem
)
def test_shapes_and_parameters_are_the_engines(path):
    net = read_net(path)
    engine = Net(net, phase=caffe_pb2.TRAIN)
    graph = build(net, caffe_pb2.TRAIN)
    for key, layer in graph.layers.items():
        for top, shape in zip(layer.top, graph.shapes[key].tops):
            if top not in layer.bottom:  # in place: the engine's blob holds the last layer's shape
                assert shape == engine.blob_by_name(top).shape, (key, top)
        owner = engine.layers[engine.layer_names.index(layer.name)]
        assert graph.shapes[key].params == [b.shape for b in owner.blobs], key


def test_resnet152_totals_match_the_paper():
    graph = build(resnet152(batch=1))
    assert len(graph.layers) > 500
    assert graph.total_params == pytest.approx(60.2e6, rel=0.01)  # He et al. 2016: 60.2 M
    assert graph.total_flops == pytest.approx(2 * 11.3e9, rel=0.03)  # 11.3 G multiply-adds
    conv1 = graph.nodes["conv1"]
    assert conv1.params == 64 * 3 * 7 * 7 and conv1.top_shapes == [(1, 64, 112, 112)]
    assert [b.layer.type for b in conv1.bands] == ["BatchNorm", "Scale", "ReLU"]


def test_shared_weights_count_once():
    graph = build(read_net(EXAMPLES / "siamese.prototxt"))
    per_layer = sum(n.params for n in graph.nodes.values())
    assert graph.total_params * 2 == per_layer  # two towers, one set of weights


def test_split_overlay_inserts_caffes_split_and_rewires():
    graph = build(net_of(FORK), splits=True)
    split = graph.nodes["data_input_0_split"]
    assert split.generated and split.index is None and split.layer.type == "Split"
    assert split.tops == ["data_input_0_split_0", "data_input_0_split_1"]
    assert graph.nodes["conv_a"].bottoms == ["data_input_0_split_0"]
    assert graph.nodes["conv_b"].bottoms == ["data_input_0_split_1"]
    assert graph.keys_of_index == {0: "input", 1: "conv_a", 2: "conv_b", 3: "relu_b", 4: "sum"}
    assert "data_input_0_split" not in build(net_of(FORK)).nodes


def test_phase_filter():
    net = read_net(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    train, test = build(net, caffe_pb2.TRAIN), build(net, caffe_pb2.TEST)
    assert "accuracy" not in train.nodes and "accuracy" in test.nodes
    assert train.nodes["mnist"].index == 0 and test.nodes["mnist"].index == 1


def _messages(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for p in validate(build(net_of(text))):
        found.setdefault(p.key, []).append(f"{p.severity}: {p.message}")
    return found


def test_problems_name_the_layer_and_the_fault():
    found = _messages(
        """
        layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 3 dim: 4 dim: 4 } } }
        layer { name: "a" type: "ReLU" bottom: "nowhere" top: "a" }
        layer { name: "b" type: "Sigmoid" bottom: "x" top: "x2" }
        layer { name: "c" type: "TanH" bottom: "x" top: "x2" }
        layer { name: "d" type: "Frobnicate" bottom: "x" top: "d" }
        layer { name: "e" type: "InnerProduct" bottom: "x" top: "e" }
        layer { name: "f" type: "Eltwise" bottom: "x" bottom: "e" top: "f" }
        """
    )
    assert found["a"] == ["error: bottom 'nowhere' is not produced by any layer in TRAIN"]
    assert found["c"] == ["error: top 'x2' is already produced by 'b'"]
    assert found["d"] == ["error: unknown layer type 'Frobnicate'"]
    assert any("num_output" in m for m in found["e"])  # the engine's own set-up message
    assert "f" not in found  # its input is unknown: no second error for the same mistake


def test_cycles_and_late_producers():
    found = _messages(
        """
        layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 2 } } }
        layer { name: "p" type: "Eltwise" bottom: "x" bottom: "q" top: "p" }
        layer { name: "q" type: "ReLU" bottom: "p" top: "q" }
        """
    )
    assert any("runs later" in m for m in found["p"])
    assert any(m.startswith("error: part of a cycle: p → q → p") for m in found["q"])


def test_missing_data_source_is_a_warning(tmp_path):
    net = read_net(EXAMPLES / "mnist" / "lenet_train_test.prototxt")
    for layer in net.layer[:2]:
        layer.data_param.source = str(tmp_path / "no_such_lmdb")
    problems = validate(build(net))
    assert [(p.severity, p.key, p.index) for p in problems] == [(WARNING, "mnist", 0)]
    assert "no_such_lmdb" in problems[0].message


def test_graph_view_never_imports_app():
    import subprocess
    import sys

    from graph_view_support import REPO

    code = (
        "import sys, graph_view.editor, graph_view.render, graph_view.cli_draw; "
        "print(sorted(m for m in sys.modules if m == 'app' or m.startswith('app.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
