"""Qt-free parts of the inspector and solver editor: defaults, the param map, checks, edits, totals."""

from __future__ import annotations

import numpy as np
import pytest
from undo_history import History

from app.checks import layer_edit_problem, layer_problems, solver_problems
from app.commands import CommandError, ReplaceLayer, ReplaceSolver, SetLayerField, SetSolverField
from app.document import Document
from app.examples import examples, open_example, solver_for
from app.form_edits import change_type, layer_edit, net_edit, solver_edit
from app.forms.docs import field_doc
from app.forms.values import format_float, parse_value
from app.layer_defaults import default_layer
from app.layer_families import OTHER, colour_of, family_of, grouped, matches
from app.layer_params import param_fields, stray_params
from app.lr_plot import sampled_schedule
from app.net_stats import human, net_totals
from engine.layers import layer_types
from engine.net import Net
from engine.solvers import lr_policy
from graph_view import style
from proto import caffe_pb2
from proto.textio import parse_net

TINY = """name: "tiny"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 dim: 8 dim: 8 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "drop" type: "Dropout" bottom: "conv1" top: "conv1" dropout_param { dropout_ratio: 0.5 } }
layer { name: "ip" type: "InnerProduct" bottom: "conv1" top: "ip" inner_product_param { num_output: 10 } }
"""
# What each type is fed when checking that its default layer sets up (default: one 4x3x8x8 blob).
_SCORES = [(4, 10), (4,)]
_FEEDS: dict[str, list[tuple[int, ...]]] = {
    "SoftmaxWithLoss": _SCORES,
    "Accuracy": _SCORES,
    "HingeLoss": _SCORES,
    "MultinomialLogisticLoss": _SCORES,
    "EuclideanLoss": [(4, 10), (4, 10)],
    "SigmoidCrossEntropyLoss": [(4, 10), (4, 10)],
    "ContrastiveLoss": [(4, 10), (4, 10), (4,)],
    "InfogainLoss": [(4, 10), (4,), (10, 10)],
    "Eltwise": [(4, 3, 8, 8)] * 2,
    "Concat": [(4, 3, 8, 8)] * 2,
    "Crop": [(4, 3, 8, 8), (4, 3, 6, 6)],
    "BatchReindex": [(4, 3, 8, 8), (2,)],
    "Embed": [(4, 5)],
    "LSTM": [(4, 3, 8), (4, 3)],
    "RNN": [(4, 3, 8), (4, 3)],
    "LSTMUnit": [(1, 3, 5), (1, 3, 20), (1, 3)],
    "Filter": [(4, 3, 8, 8), (4,)],
    "Input": [],
    "DummyData": [],
    "MemoryData": [],
    "Parameter": [],
}
# Data readers need files on disk, HDF5Output creates one, Python needs a module of the user's.
_SKIP_SETUP = {"Data", "ImageData", "HDF5Data", "WindowData", "HDF5Output", "Python"}


def tiny_doc() -> tuple[Document, History]:
    doc = Document(parse_net(TINY))
    return doc, History(doc)


# ---- families, params, defaults -------------------------------------------------------------
def test_every_registered_type_has_a_family_a_description_and_sound_defaults():
    registered = layer_types()
    assert len(registered) > 40
    for layer_type in registered:
        assert family_of(layer_type) is not OTHER, layer_type
        layer = default_layer(layer_type, "x")
        assert layer_problems(layer) == [], (layer_type, layer_problems(layer))
        for name in param_fields(layer_type):
            assert name in caffe_pb2.LayerParameter.DESCRIPTOR.fields_by_name
    listed = [t for _family, types in grouped(registered) for t in types]
    assert sorted(listed) == sorted(registered)  # each once
    assert [f.key for f, _ in grouped(registered)][:2] == ["data", "vision"]
    # every registered type gets a family colour of the canvas, and the families are told apart
    assert all(colour_of(t) != style.UNKNOWN.colour for t in registered)
    assert (
        len({colour_of(t) for t in ("Data", "Convolution", "ReLU", "Pooling", "Concat", "SoftmaxWithLoss")})
        == 6
    )


@pytest.mark.parametrize("layer_type", sorted(set(layer_types()) - _SKIP_SETUP))
def test_each_default_layer_sets_up_in_the_engine(layer_type):
    """Added from the palette and wired to an input, a default layer builds: it is runnable as is."""
    feeds = _FEEDS.get(layer_type, [(4, 3, 8, 8)])
    net = caffe_pb2.NetParameter()
    if feeds:
        source = net.layer.add(name="in", type="Input")
        for i, shape in enumerate(feeds):
            source.input_param.shape.add().dim.extend(shape)
            source.top.append(f"b{i}")
    layer = default_layer(layer_type, "x")
    layer.bottom[:] = [f"b{i}" for i in range(len(feeds))]
    net.layer.add().CopyFrom(layer)
    built = Net(net, phase=caffe_pb2.TRAIN)
    assert built.layers[-1].type == layer_type


def test_param_fields_follow_the_type():
    assert param_fields("Convolution") == ("convolution_param",)
    assert param_fields("Deconvolution") == ("convolution_param",)
    assert param_fields("InnerProduct") == ("inner_product_param",)
    assert param_fields("PReLU") == ("prelu_param",)
    assert param_fields("LRN") == ("lrn_param",)
    assert param_fields("HDF5Data") == ("hdf5_data_param",)
    assert param_fields("Data") == ("data_param", "transform_param")
    assert param_fields("SoftmaxWithLoss") == ("softmax_param", "loss_param")
    assert param_fields("Split") == ()
    layer = default_layer("ReLU", "r")
    layer.convolution_param.num_output = 3
    assert stray_params(layer) == ["convolution_param"]


def test_filler_and_solver_checks_are_the_engines():
    doc, _ = tiny_doc()
    layer_edit(doc, 1, "convolution_param.weight_filler.type", "gaussian").do(doc)
    with pytest.raises(CommandError, match="weight_filler: std must be positive"):
        layer_edit(doc, 1, "convolution_param.weight_filler.std", -0.5)
    with pytest.raises(CommandError, match="unknown filler type 'gauss'"):
        layer_edit(doc, 1, "convolution_param.bias_filler.type", "gauss")
    solver = caffe_pb2.SolverParameter(type="RMSProp", rms_decay=1.5)
    assert "rms_decay should lie between 0 and 1 (got 1.5)." in solver_problems(solver)


def test_search_matches_names_families_and_synonyms():
    assert matches("InnerProduct", "fc") and matches("InnerProduct", "fully")
    assert matches("Convolution", "CONV") and not matches("ReLU", "conv")
    assert matches("SoftmaxWithLoss", "loss") and matches("Accuracy", "loss output")
    assert not matches("Pooling", "zzz")


# ---- values and docs ------------------------------------------------------------------------
def test_values_read_and_write_as_prototxt_does():
    fields = caffe_pb2.LRNParameter.DESCRIPTOR.fields_by_name
    assert format_float(1e-4) == "0.0001" and format_float(0.75) == "0.75" and format_float(100.0) == "100.0"
    assert parse_value(fields["alpha"], " 2e-4 ") == pytest.approx(2e-4)
    assert parse_value(fields["norm_region"], "within_channel") == caffe_pb2.LRNParameter.WITHIN_CHANNEL
    for bad, field in (("abc", "alpha"), ("nan", "alpha"), ("1.5", "local_size"), ("-1", "local_size")):
        with pytest.raises(ValueError, match=field):
            parse_value(fields[field], bad)
    assert "decay_mult" not in field_doc("ParamSpec", "lr_mult") and "base_lr" in field_doc(
        "ParamSpec", "decay_mult"
    )


# ---- checks ---------------------------------------------------------------------------------
def test_checks_refuse_what_the_engine_would():
    conv = default_layer("Convolution", "c")
    for path, value, words in (
        ("convolution_param.num_output", 0, "num_output must be positive"),
        ("convolution_param.group", 5, "multiple of group"),
        ("convolution_param.kernel_size", [3, 0], "kernel_size must be positive"),
        ("name", "  ", "needs a name"),
        ("bottom", ["data", ""], "bottom blob needs a name"),
        ("loss_weight", [float("inf")], "finite"),
        ("param", [caffe_pb2.ParamSpec()] * 3, "too many param"),
    ):
        new = caffe_pb2.LayerParameter()
        new.CopyFrom(conv)
        from app.fields import set_field

        set_field(new, path, value)
        assert words in (layer_edit_problem(conv, new) or ""), path
    lrn = default_layer("LRN", "n")
    lrn.lrn_param.local_size = 4
    assert any("odd" in p for p in layer_problems(lrn))


def test_an_edit_may_keep_an_old_problem_but_not_add_one():
    broken = default_layer("Convolution", "c")
    broken.convolution_param.num_output = 0  # as opened from a file
    fixed_elsewhere = caffe_pb2.LayerParameter()
    fixed_elsewhere.CopyFrom(broken)
    fixed_elsewhere.convolution_param.kernel_size[:] = [5]
    assert layer_edit_problem(broken, fixed_elsewhere) is None


def test_solver_checks():
    solver = caffe_pb2.SolverParameter(base_lr=0.01, lr_policy="step", stepsize=0, max_iter=10)
    assert "stepsize" in " ".join(solver_problems(solver))
    assert "unknown lr_policy" in " ".join(solver_problems(caffe_pb2.SolverParameter(lr_policy="cosine")))
    assert "unknown solver type" in " ".join(solver_problems(caffe_pb2.SolverParameter(type="Lion")))


# ---- edits ----------------------------------------------------------------------------------
def test_layer_edits_become_commands_or_refusals():
    doc, history = tiny_doc()
    command = layer_edit(doc, 1, "convolution_param.num_output", 16)
    assert isinstance(command, SetLayerField)
    history.push(command)
    assert doc.layer(1).convolution_param.num_output == 16
    with pytest.raises(CommandError, match="dropout_ratio"):
        layer_edit(doc, 2, "dropout_param.dropout_ratio", 1.0)
    with pytest.raises(CommandError, match="already exists"):
        history.push(layer_edit(doc, 2, "name", "conv1"))
    with pytest.raises(CommandError):
        layer_edit(doc, 1, "convolution_param.no_such_field", 1)
    assert doc.layer(2).name == "drop" and doc.layer(2).dropout_param.dropout_ratio == 0.5


def test_setting_one_required_field_fills_its_partner():
    doc, history = tiny_doc()
    history.push(change_type(doc, 2, "Clip"))
    assert doc.layer(2).clip_param.max == 6.0 and not doc.layer(2).HasField("dropout_param")
    history.push(ReplaceLayer(2, default_layer("ReLU", "drop")))
    command = layer_edit(doc, 2, "clip_param.max", 3.0)  # ReLU has no clip_param yet: min must come too
    assert isinstance(command, ReplaceLayer)
    history.push(command)
    assert doc.layer(2).clip_param.min == 0.0 and doc.layer(2).clip_param.max == 3.0


def test_changing_type_brings_the_new_defaults_and_undoes_in_one_step():
    doc, history = tiny_doc()
    before = doc.net.SerializeToString()
    history.push(layer_edit(doc, 3, "type", "Convolution"))
    layer = doc.layer(3)
    assert layer.type == "Convolution" and layer.convolution_param.kernel_size == [3]
    assert not layer.HasField("inner_product_param")
    history.undo()
    assert doc.net.SerializeToString() == before


def test_net_and_solver_edits():
    doc, history = tiny_doc()
    history.push(net_edit(doc, "name", "renamed"))
    assert doc.net.name == "renamed"
    doc.load_solver(caffe_pb2.SolverParameter(base_lr=0.01, lr_policy="fixed", max_iter=9000))
    assert isinstance(solver_edit(doc, "base_lr", 0.1), SetSolverField)
    command = solver_edit(doc, "lr_policy", "step")  # step needs a stepsize: one is filled in
    assert isinstance(command, ReplaceSolver)
    history.push(command)
    assert (
        doc.solver.lr_policy == "step"
        and doc.solver.stepsize == 3000
        and doc.solver.gamma == pytest.approx(0.1)
    )
    with pytest.raises(CommandError, match="max_iter"):
        solver_edit(doc, "max_iter", -5)
    with pytest.raises(CommandError, match="unknown lr_policy"):
        solver_edit(doc, "lr_policy", "cosine")


# ---- derived facts --------------------------------------------------------------------------
def test_totals_of_a_small_net_match_a_count_by_hand():
    totals = net_totals(parse_net(TINY))
    conv_params = 4 * 3 * 3 * 3 + 4
    ip_params = 10 * (4 * 6 * 6) + 10
    assert totals.params == conv_params + ip_params
    assert totals.blobs == 2 * 3 * 8 * 8 + 2 * 4 * 6 * 6 + 2 * 10  # dropout runs in place
    conv_flops = 2 * (4 * 6 * 6) * 27 + 4 * 6 * 6  # per image: multiply-adds and the bias
    ip_flops = 2 * 10 * 144 + 10
    assert totals.flops == conv_flops + 4 * 6 * 6 + ip_flops  # the dropout: one per element
    assert human(60_965_224) == "61M" and human(431_080) == "431k" and human(12) == "12"


def test_totals_say_why_a_net_cannot_be_built():
    net = parse_net('layer { name: "ip" type: "InnerProduct" bottom: "nothing" top: "ip" }')
    with pytest.raises(Exception, match="nothing"):
        net_totals(net)


def test_the_sampled_schedule_agrees_with_the_engine_everywhere_it_draws():
    for policy, extra in (
        ("multistep", {}),
        ("step", {"stepsize": 7001}),
        ("inv", {"power": 0.75}),
        ("poly", {"power": 2.0}),
        ("sigmoid", {"stepsize": 20_000}),
        ("fixed", {}),
    ):
        gamma = 0.001 if policy == "sigmoid" else 0.5
        param = caffe_pb2.SolverParameter(
            base_lr=0.1, lr_policy=policy, gamma=gamma, max_iter=50_000, **extra
        )
        param.stepvalue.extend([30_000, 10_000, 10_000, 45_000])
        its, rates = sampled_schedule(param, param.max_iter)
        full = np.array(lr_policy.schedule(param, param.max_iter))
        assert len(its) < 5_000 and its[0] == 0 and its[-1] == param.max_iter - 1
        np.testing.assert_array_equal(rates, full[its])


def test_examples_open_untitled_with_their_solver():
    found = {e.relative: e for e in examples()}
    assert "mnist/lenet_train_test.prototxt" in found and "resnet.prototxt" in found
    lenet = found["mnist/lenet_train_test.prototxt"]
    assert "LeNet" in lenet.title and lenet.description
    assert solver_for(lenet.path).name == "lenet_solver.prototxt"
    doc = Document()
    open_example(doc, lenet.path)
    assert doc.net.name == "LeNet" and doc.net_path is None and doc.solver.max_iter == 10000
    assert not doc.dirty and doc.net_text().startswith("# LeNet")
