"""The initialisation experiment's parts that need no training: how a filler is spelt and put into a
net, the verdict rule, and the CSV/JSON/table it writes."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from google.protobuf import text_format

from engine.experiments import filler_spec, report, verdict
from engine.experiments.compare_init import CompareInit, Curves, Variant
from engine.experiments.filler_spec import SpecError, parse
from proto import caffe_pb2

NET = """
layer { name: "x" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "a" type: "InnerProduct" bottom: "x" top: "a"
        inner_product_param { num_output: 4 weight_filler { type: "xavier" }
                              bias_filler { type: "constant" value: 0.5 } } }
layer { name: "r" type: "ReLU" bottom: "a" top: "a" }
layer { name: "b" type: "InnerProduct" bottom: "a" top: "b" inner_product_param { num_output: 2 } }
"""


def net() -> caffe_pb2.NetParameter:
    return text_format.Parse(NET, caffe_pb2.NetParameter())


@pytest.mark.parametrize(
    "spec, want",
    [
        ("constant 0", 'type: "constant" value: 0'),
        ("gaussian std=0.01", 'type: "gaussian" std: 0.01'),
        ("gaussian 0.01", 'type: "gaussian" std: 0.01'),
        ("uniform -0.5 0.5", 'type: "uniform" min: -0.5 max: 0.5'),
        ("uniform  min=-0.5   max=0.5", 'type: "uniform" min: -0.5 max: 0.5'),
        ("xavier", 'type: "xavier"'),
        ("msra variance_norm=FAN_OUT", 'type: "msra" variance_norm: FAN_OUT'),
        ('type: "gaussian" std: 0.1 sparse: 2', 'type: "gaussian" std: 0.1 sparse: 2'),
    ],
)
def test_filler_spellings(spec, want):
    filler = parse(spec)
    assert filler == text_format.Parse(want, caffe_pb2.FillerParameter())
    assert parse(filler_spec.describe(filler)) == filler  # what is shown reads back


def test_as_written_and_every_preset_parse():
    assert parse("as written") is None and parse("As  Written") is None
    assert filler_spec.describe(None) == "as written"
    for label, spec in filler_spec.PRESETS.items():
        assert spec == "as written" or parse(spec) is not None, label


@pytest.mark.parametrize(
    "spec, words",
    [
        ("", "empty filler"),
        ("foo", "unknown filler 'foo'"),
        ("gaussian sdt=1", "gaussian has no field 'sdt'"),
        ("gaussian std=abc", "'abc' is not a value for std"),
        ("gaussian std=-1", "std must be positive"),
        ("uniform 1", "uniform takes min max"),
        ("uniform min=2 max=1", "min (2.0) must not exceed max (1.0)"),
        ("xavier variance_norm=SIDEWAYS", "'SIDEWAYS' is not a value for variance_norm"),
        ('type: "nope"', "unknown type 'nope'"),
        ("type: gaussian std:", "filler 'type: gaussian std:'"),
    ],
)
def test_bad_fillers_are_one_line_naming_the_problem(spec, words):
    with pytest.raises(SpecError) as caught:
        parse(spec)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_filler_goes_into_the_weights_of_the_chosen_layers_only():
    param = net()
    filler_spec.apply(param, parse("msra"), ["b"])
    a, b = param.layer[1].inner_product_param, param.layer[3].inner_product_param
    assert a.weight_filler.type == "xavier" and b.weight_filler.type == "msra"
    assert a.bias_filler.value == 0.5 and not b.HasField("bias_filler")  # biases keep the net's
    everywhere = net()
    filler_spec.apply(everywhere, parse("constant 0"), [])
    assert [everywhere.layer[i].inner_product_param.weight_filler.type for i in (1, 3)] == ["constant"] * 2
    untouched = net()
    filler_spec.apply(untouched, None, [])
    assert untouched == net()


def test_a_layer_list_naming_a_missing_layer_or_one_without_weights_is_refused():
    with pytest.raises(SpecError, match="the net has no layer 'c'"):
        filler_spec.check_layers(net(), ["a", "c"])
    with pytest.raises(SpecError, match=r"layer 'r' \(ReLU\) has no weights"):
        filler_spec.check_layers(net(), ["r"])
    filler_spec.check_layers(net(), ["a", "b"])


def test_the_experiment_refuses_variant_counts_names_seeds_and_layers_before_building():
    solver = caffe_pb2.SolverParameter(base_lr=0.1, max_iter=5)
    solver.net_param.CopyFrom(net())
    two = [Variant.parse("x", "xavier"), Variant.parse("m", "msra")]
    with pytest.raises(SpecError, match="give 2 to 6 variants to compare, not 1"):
        CompareInit(solver, two[:1], 5)
    with pytest.raises(SpecError, match="not 7"):
        CompareInit(solver, [Variant.parse(f"v{i}", "xavier") for i in range(7)], 5)
    with pytest.raises(SpecError, match="two variants are named 'x'"):
        CompareInit(solver, [two[0], two[0]], 5)
    with pytest.raises(SpecError, match="no layer 'zz'"):
        CompareInit(solver, two, 5, layers=["zz"])
    with pytest.raises(SpecError, match="seed must be 0 or more"):
        CompareInit(solver, two, 5, seed=-1)


# --- the verdict rule --------------------------------------------------------------------------
def test_verdict_with_a_test_accuracy():
    flat = [2.3026] * 20
    falling = [2.3 - 0.1 * i for i in range(20)]
    tests = [(0, 0.1), (250, 0.5), (500, 0.978)]
    learned = verdict.judge(falling, tests, 0.1, 500)
    assert learned.word == verdict.LEARNED and learned.text == "learned: 97.8% after 500 iterations"
    assert learned.best_accuracy == 0.978 and learned.beat_chance_at == 250
    # progress (acc - chance) / (1 - chance): 0.55 is exactly half way from 10% to 100%
    assert verdict.judge(falling, [(0, 0.1), (9, 0.55)], 0.1, 10).word == verdict.LEARNED
    little = verdict.judge(falling, [(0, 0.1), (9, 0.3)], 0.1, 10)
    assert (
        little.word == verdict.A_LITTLE
        and little.text == "learned a little: 30.0% after 10 iterations (chance 10.0%)"
    )
    assert little.beat_chance_at == 9
    dead = verdict.judge(flat, [(0, 0.1), (19, 0.113)], 0.1, 20)
    assert dead.word == verdict.NOT and dead.beat_chance_at is None
    assert dead.text == "did not learn: loss flat at 2.30, 11.3% after 20 iterations (chance 10.0%)"
    top5 = verdict.judge(flat, [(0, 0.5), (19, 0.56)], 5 / 10, 20)  # top_k 5 of 10 classes: chance 50%
    assert top5.word == verdict.A_LITTLE


def test_verdict_from_the_loss_alone():
    assert (
        verdict.judge([2.3] * 10 + [1.0] * 10, [], None, 20).text
        == "learned: loss 2.3 -> 1 after 20 iterations"
    )
    assert verdict.judge([2.3] * 10 + [1.8] * 10, [], None, 20).word == verdict.A_LITTLE
    assert (
        verdict.judge([2.30, 2.31, 2.29, 2.30], [], None, 4).text
        == "did not learn: loss flat at 2.30 after 4 iterations"
    )
    assert (
        verdict.judge([1.0] * 10 + [3.0] * 10, [], None, 20).text
        == "did not learn: loss rose from 1 to 3 after 20 iterations"
    )
    # start and end: the mean of a tenth of the run, 1 to 10 losses
    assert verdict.ends([4.0, 2.0, 1.0]) == (4.0, 1.0)
    assert verdict.ends(list(range(100))) == (4.5, 94.5)
    assert verdict.ends(list(range(1000))) == (4.5, 994.5)


def test_verdict_when_the_run_failed_or_never_ran():
    diverged = verdict.judge([2.3], [(0, 0.1)], 0.1, 1, "Iteration 1: loss is nan", diverged=True)
    assert diverged.word == verdict.DIVERGED and diverged.text == "diverged: Iteration 1: loss is nan"
    failed = verdict.judge([], [], None, 0, "xavier filler, blob shape (): the blob is empty")
    assert failed.word == verdict.FAILED and failed.text.startswith("failed: xavier filler")
    assert math.isnan(failed.final_loss)
    assert verdict.judge([], [], None, 0).text == "did not learn: no iteration ran"


# --- what it writes ---------------------------------------------------------------------------
def curves() -> list[Curves]:
    a = Curves("zero", "constant value=0", iters=[0, 1], loss=[2.3, 2.3], smoothed=[2.3, 2.3])
    a.tests = [(0, {"accuracy": 0.1, "loss": 2.3}), (2, {"accuracy": 0.11, "loss": 2.3})]
    a.stat_iters, a.act_std, a.grad_norm, a.dead = [0], [(0.5, 0.0)], [(math.nan, 0.0)], [(math.nan, 1.0)]
    a.verdict = verdict.judge(a.loss, [(0, 0.1), (2, 0.11)], 0.1, 2)
    b = Curves("xavier", "xavier", iters=[0, 1], loss=[2.3, 1.0], smoothed=[2.3, 1.65])
    b.tests = [(0, {"accuracy": 0.1, "loss": 2.3}), (2, {"accuracy": 0.9, "loss": 0.4})]
    b.stat_iters, b.act_std, b.grad_norm, b.dead = [0], [(0.5, 1.2)], [(math.nan, 0.3)], [(math.nan, 0.4)]
    b.verdict = verdict.judge(b.loss, [(0, 0.1), (2, 0.9)], 0.1, 2)
    return [a, b]


def test_the_table_has_a_line_per_variant():
    lines = report.table(curves()).splitlines()
    assert lines[0].split() == [
        "variant",
        "filler",
        "final",
        "loss",
        "best",
        "test",
        "accuracy",
        "beat",
        "chance",
        "at",
    ]
    assert lines[1].split() == ["zero", "constant", "value=0", "2.3", "11.0%", "-"]
    assert lines[2].split() == ["xavier", "xavier", "1", "90.0%", "iteration", "2"]


def test_csv_rows_per_variant_and_iteration_with_tests_and_stats_where_taken():
    rows = list(csv.DictReader(io.StringIO(report.to_csv(curves(), ["data", "ip1"]))))
    assert [(r["variant"], r["iteration"]) for r in rows] == [("zero", "0"), ("zero", "1"), ("zero", "2")] + [
        ("xavier", "0"),
        ("xavier", "1"),
        ("xavier", "2"),
    ]
    x0, x1, x2 = rows[3:]
    assert float(x0["loss"]) == 2.3 and float(x0["test accuracy"]) == 0.1 and float(x0["ip1 dead"]) == 0.4
    assert x0["data grad_norm"] == "nan"
    assert x1["test accuracy"] == "" and x1["ip1 act_std"] == ""  # not tested or measured there
    assert x2["loss"] == "" and float(x2["test accuracy"]) == 0.9  # the final test, after the last iteration


def test_json_has_every_curve_and_nan_as_null():
    doc = json.loads(report.to_json(curves(), ["data", "ip1"], iterations=2, seed=1, batches_differ_at=None))
    assert doc["iterations"] == 2 and doc["layers"] == ["data", "ip1"] and doc["batches_differ_at"] is None
    zero, xavier = doc["variants"]
    assert xavier["verdict"] == "learned: 90.0% after 2 iterations" and xavier["beat_chance_at"] == 2
    assert zero["stats"]["grad_norm"] == [[None, 0.0]] and zero["stats"]["dead"] == [[None, 1.0]]
    assert xavier["tests"][1] == {"iter": 2, "scores": {"accuracy": 0.9, "loss": 0.4}}


@pytest.mark.parametrize("offset", [0.0, 50.0])  # centred, and a spread of 2% of the mean (the careful path)
def test_layer_stats_match_float64_numpy(offset):
    from engine.experiments import layer_stats
    from engine.net import Net

    param = text_format.Parse(
        'layer { name: "x" type: "Input" top: "x" input_param { shape { dim: 64 dim: 20 dim: 24 dim: 24 } } }'
        'layer { name: "r" type: "ReLU" bottom: "x" top: "y" }',
        caffe_pb2.NetParameter(),
    )
    net = Net(param)
    values = np.random.default_rng(4).standard_normal(net.blob_list[0].shape).astype(np.float32) + offset
    net.blob_list[0].data[...] = values
    net.blob_list[0].diff[...] = values[::-1]
    net.forward_from_to()
    net.blob_need_backward[0] = True  # as a net that learns below would have it
    layers = layer_stats.plotted_layers(net)
    assert [net.layer_names[i] for i in layers] == ["x", "r"]
    shot = layer_stats.measure(net, layers, layer_stats.relu_outputs(net, layers))
    wide = values.astype(np.float64)
    # float32 BLAS sums of 737k squares against numpy's float64 ones: ~1e-6 relative
    assert shot.act_mean[0] == pytest.approx(wide.mean(), rel=1e-9)
    assert shot.act_std[0] == pytest.approx(wide.std(), rel=1e-5)
    assert shot.grad_norm[0] == pytest.approx(np.sqrt((wide**2).sum()), rel=1e-5)
    assert shot.act_std[1] == pytest.approx(np.maximum(wide, 0).std(), rel=1e-5)
    assert math.isnan(shot.dead[0]) and shot.dead[1] == np.mean(values <= 0)
    assert math.isnan(shot.grad_norm[1])  # nothing asked for the ReLU's gradient


def test_test_batches_default_to_at_most_ten():
    solver = caffe_pb2.SolverParameter(base_lr=0.1, test_iter=[100], test_interval=500)
    solver.net_param.CopyFrom(net())
    two = [Variant.parse("x", "xavier"), Variant.parse("m", "msra")]
    default = CompareInit(solver, two, 300).solver_param(two[0])
    assert list(default.test_iter) == [10] and default.test_interval == 30  # a tenth of the run
    given = CompareInit(solver, two, 300, test_iter=3, test_interval=7).solver_param(two[1])
    assert list(given.test_iter) == [3] and given.test_interval == 7
    assert given.random_seed == 1 and given.snapshot == 0 and not given.snapshot_after_train
    assert given.net_param.layer[1].inner_product_param.weight_filler.type == "msra"
