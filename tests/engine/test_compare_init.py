"""Initialisation experiments on LeNet and the bundled MNIST: who learns, on which batches, from
which weights, with which per-layer numbers, and pause/stop for every variant at once."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from engine import events, rng
from engine.experiments import events as exp
from engine.experiments import seeded_fill, verdict
from engine.experiments.compare_init import CompareInit, Variant
from engine.solvers import Solver, create_solver
from tests.engine.compare_init_support import lenet, mnist_root  # noqa: F401  (a fixture)

DIGITS = {
    "zero": "constant 0",
    "u01": "uniform min=0 max=1",
    "u05": "uniform min=-0.5 max=0.5",
    "xavier": "xavier",
    "msra": "msra",
}
# Variants that diverge overflow in the engine's worker threads; their verdict is what is tested.
pytestmark = pytest.mark.filterwarnings(
    "ignore:overflow:RuntimeWarning", "ignore:invalid value:RuntimeWarning"
)
ITERATIONS = 50  # xavier and msra pass 50% on LeNet within 50 iterations at batch 64; ~5 s for all five


def built(experiment: CompareInit) -> list[Solver]:
    assert all(s is not None for s in experiment.solvers)
    return [s for s in experiment.solvers if s is not None]


@pytest.fixture(scope="module")
def digits(mnist_root):  # noqa: F811
    """DIGITS's five variants, run once for the module; the weights each started from, kept."""
    param, data_paths = lenet(mnist_root)
    started: dict[str, np.ndarray] = {}
    arrays: list[list[np.ndarray]] = []
    experiment: CompareInit

    def listener(event):
        if isinstance(event, exp.Ready):  # built, nothing trained yet
            for variant, solver in zip(experiment.variants, built(experiment)):
                started[variant.name] = solver.net.layer_by_name("conv1").blobs[0].data.copy()
                arrays.append([p.data for p in solver.net.learnable_params])

    variants = [Variant.parse(name, spec) for name, spec in DIGITS.items()]
    experiment = CompareInit(
        param, variants, ITERATIONS, seed=3, listener=listener, test_interval=25, test_iter=2, stats_every=5,
        data_paths=data_paths,
    )  # fmt: skip
    curves = {c.name: c for c in experiment.run()}
    return experiment, curves, started, arrays


def test_constant_zero_and_uniform_0_1_do_not_learn_while_xavier_and_msra_do(digits):
    _, curves, _, _ = digits
    words = {name: c.verdict.word for name, c in curves.items()}
    assert words["zero"] == words["u01"] == verdict.NOT
    assert words["xavier"] == words["msra"] == verdict.LEARNED
    assert words["u05"] != verdict.LEARNED  # too wide for LeNet: it diverges or barely moves
    assert curves["zero"].verdict.text.startswith("did not learn: loss flat at 2.30")
    for name in ("xavier", "msra"):
        v = curves[name].verdict
        assert v.best_accuracy > 0.5 and v.beat_chance_at is not None
        assert v.text == f"learned: {curves[name].tests[-1][1]['accuracy']:.1%} after {ITERATIONS} iterations"
    # tested at 0, 25 and 50 (the end): the variants' scores line up
    assert [it for it, _ in curves["xavier"].tests] == [0, 25, 50]


def test_every_variant_trains_on_the_same_batches_in_the_same_order(digits):
    experiment, curves, _, _ = digits
    reference = curves["xavier"].batches
    assert len(reference) == ITERATIONS and len(set(reference)) == ITERATIONS  # a new batch each time
    for name in ("zero", "u01", "msra"):
        assert curves[name].batches == reference
    assert experiment.batches_differ_at is None


def test_each_variant_starts_from_its_own_weights_and_shares_none(digits):
    experiment, curves, started, arrays = digits
    assert not started["zero"].any()
    assert started["u01"].min() >= 0 and started["u01"].max() <= 1 and started["u01"].std() > 0.2
    fan_in = 1 * 5 * 5
    limit = math.sqrt(3 / fan_in)
    assert np.abs(started["xavier"]).max() <= limit and started["xavier"].std() > limit / 3
    assert not np.array_equal(started["xavier"], started["msra"])
    for a in range(len(arrays)):
        for b in range(a + 1, len(arrays)):
            assert not any(np.shares_memory(x, y) for x, y in zip(arrays[a], arrays[b]))
    conv1 = [s.net.layer_by_name("conv1").blobs[0].data for s in built(experiment)]
    assert not np.array_equal(conv1[3], conv1[4])  # xavier and msra trained apart


def test_per_layer_stats_show_the_zero_net_dead_and_the_xavier_net_alive(digits):
    experiment, curves, _, _ = digits
    zero, xavier = curves["zero"], curves["xavier"]
    assert zero.stat_iters == list(range(0, ITERATIONS, 5))
    layers = ["mnist", "conv1", "pool1", "conv2", "pool2", "ip1", "ip2"]
    ip1, conv1 = layers.index("ip1"), layers.index("conv1")
    for shot in range(len(zero.stat_iters)):
        # zero weights above: no gradient reaches conv1, and ip1's ReLU outputs are all zero
        assert zero.grad_norm[shot][conv1] == 0 and zero.dead[shot][ip1] == 1
        assert 0 < xavier.dead[shot][ip1] < 1 and xavier.grad_norm[shot][conv1] > 0
        assert math.isnan(xavier.grad_norm[shot][0])  # no gradient is computed for the data
        assert math.isnan(xavier.dead[shot][conv1])  # conv1 feeds a pooling layer, not a ReLU


def test_stats_are_the_blobs_of_the_iteration_computed_directly(mnist_root):  # noqa: F811
    param, data_paths = lenet(mnist_root)
    seen: list[exp.Stats] = []
    variants = [Variant.parse("xavier", "xavier"), Variant.parse("zero", "constant 0")]

    def listener(event):
        if isinstance(event, exp.Stats):
            seen.append(event)

    experiment = CompareInit(
        param, variants, 1, seed=5, listener=listener,
        test_iter=1, data_paths=data_paths,
    )  # fmt: skip
    experiment.run()
    with rng.seeded(5):  # the same solver, built and trained for one iteration outside the experiment
        solver = create_solver(
            experiment.solver_param(variants[0]), log_fn=lambda _: None, data_paths=data_paths
        )
        try:
            seeded_fill.refill(solver.net, 5)
            solver.step(1)
        finally:
            solver.close()
    net = solver.net
    conv1 = net.layer_by_name("conv1")
    conv1_top = net.top_vecs[net.layers.index(conv1)][0]
    ip1_top = net.top_vecs[net.layers.index(net.layer_by_name("ip1"))][0]
    std = np.sqrt(
        np.mean((conv1_top.data.astype(np.float64) - conv1_top.data.astype(np.float64).mean()) ** 2)
    )
    norm = math.sqrt(sum(float(d) ** 2 for d in conv1_top.diff.astype(np.float64).ravel()))
    dead = sum(1 for v in ip1_top.data.ravel() if v == 0) / ip1_top.data.size
    first = next(s for s in seen if s.variant == 0)
    # The same float32 pass run twice; the experiment sums squares by a float32 BLAS dot (its
    # accumulators round at ~1e-7 each, ~1e-6 over 737k values), the reference in float64.
    assert first.iter == 0
    assert first.act_std[1] == pytest.approx(std, rel=1e-5)
    assert first.grad_norm[1] == pytest.approx(norm, rel=1e-5)
    assert first.dead[5] == dead


def test_stop_applies_to_every_variant_and_pause_holds_them_all(mnist_root):  # noqa: F811
    param, data_paths = lenet(mnist_root)
    paused, steps = threading.Event(), []
    experiment: CompareInit

    def listener(event):
        if isinstance(event, exp.Step):
            steps.append(event)
            if len(steps) == 6:  # three rounds of both variants
                experiment.pause()
        elif isinstance(event, events.Paused):
            paused.set()

    variants = [Variant.parse("a", "xavier"), Variant.parse("b", "msra")]
    experiment = CompareInit(param, variants, 200, listener=listener, test_iter=1, data_paths=data_paths)
    done: list = []
    worker = threading.Thread(target=lambda: done.append(experiment.run()))
    worker.start()
    assert paused.wait(60)
    held = len(steps)
    assert experiment.status is events.RunStatus.PAUSED and held == 6
    experiment.stop()
    worker.join(60)
    assert not worker.is_alive() and experiment.status is events.RunStatus.STOPPED
    a, b = done[0]
    assert len(steps) == held and len(a.loss) == len(b.loss) == 3  # nothing ran after the pause
    assert a.verdict is not None and b.verdict is not None


def test_a_diverging_variant_ends_alone_and_says_so(mnist_root):  # noqa: F811
    param, data_paths = lenet(mnist_root)
    variants = [Variant.parse("huge", "constant 1e30"), Variant.parse("xavier", "xavier")]
    curves = CompareInit(param, variants, 3, test_iter=1, data_paths=data_paths).run()
    huge, xavier = (c.verdict for c in curves)
    assert huge is not None and huge.word == verdict.DIVERGED and "loss is" in huge.text
    assert len(curves[1].loss) == 3 and xavier is not None and xavier.word != verdict.DIVERGED


def test_chosen_layers_change_only_those_layers_start(mnist_root):  # noqa: F811
    param, data_paths = lenet(mnist_root)
    started = []
    experiment: CompareInit

    def listener(event):
        if isinstance(event, exp.Ready):
            for solver in built(experiment):
                net = solver.net
                started.append(
                    {n: x.blobs[0].data.copy() for n, x in zip(net.layer_names, net.layers) if x.blobs}
                )

    variants = [Variant.parse("zero conv1", "constant 0"), Variant.parse("as written", "as written")]
    experiment = CompareInit(
        param, variants, 1, layers=["conv1"], listener=listener, test_iter=1, data_paths=data_paths
    )
    experiment.run()
    zero, written = started
    assert not zero["conv1"].any() and written["conv1"].std() > 0
    for name in ("conv2", "ip1", "ip2"):  # drawn from (seed, layer name): untouched by conv1's change
        np.testing.assert_array_equal(zero[name], written[name])
